"""Reports: the HTML/Markdown report, its sections, plots and tables, summaries, comparison, export and trends."""
