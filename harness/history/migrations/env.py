"""Alembic environment for the history database. ``harness.history.database.upgrade`` runs it in code with
an open connection in ``config.attributes["connection"]``; there is no alembic.ini."""

from __future__ import annotations

from alembic import context

from harness.history.orm import Base

connection = context.config.attributes.get("connection")
if connection is None:  # `alembic` command line with -x url=...: for writing new revisions
    from sqlalchemy import create_engine

    url = context.get_x_argument(as_dictionary=True).get("url", "sqlite:///history.sqlite")
    connection = create_engine(url).connect()

context.configure(
    connection=connection, target_metadata=Base.metadata, render_as_batch=connection.dialect.name == "sqlite"
)  # SQLite alters tables by copying
with context.begin_transaction():
    context.run_migrations()
if "connection" not in context.config.attributes:
    connection.commit()
    connection.close()
