"""Report plots from the records' per-token data (not the flat table): the per-token timeline and the
gate's per-position KL against the noise floor. Legends sit outside the axes, so they cover no data."""

from __future__ import annotations

from typing import Optional

from harness.records.record import Record
from harness.report.plots import Plot, pyplot

MAX_POINTS = 10  # lines per plot beyond which colours stop telling points apart
KL_LINES = {"noise floor": (1.0, "#616161"), "drift": (5.0, "#ef6c00"), "fail": (100.0, "#c62828")}


def _name(record: Record, several_scenarios: bool) -> str:
    """``adapter:device`` plus the rest of the point id (``bf16-seq256``)."""
    adapter, device = record.point.get("adapter"), record.point.get("device")
    rest = record.point_id.removeprefix(f"{adapter}-{device}-").removeprefix(f"{adapter}-{device}")
    name = f"{adapter}:{device}" + (f" {rest}" if rest else "")
    return f"{record.scenario} {name}" if several_scenarios else name


def _legend_outside(ax) -> None:
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def token_timeline(records: list[Record]) -> Optional[Plot]:
    """Latency of each generated token position, every timed round overlaid, one colour per point."""
    timed = [r for r in records if r.status == "ok" and any(s.gaps_s for s in r.samples.rounds)][:MAX_POINTS]
    if not timed:
        return None
    several = len({r.scenario for r in timed}) > 1
    plt = pyplot()
    fig, (first, rest) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [1, 5]})
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, record in enumerate(timed):
        colour = colours[index % len(colours)]
        rounds = record.samples.rounds
        first.scatter([index] * len(rounds), [s.ttft_s * 1e3 for s in rounds], color=colour, s=12, alpha=0.7)
        for number, sample in enumerate(rounds):
            positions = range(1, len(sample.gaps_s) + 1)
            rest.plot(
                positions,
                [g * 1e3 for g in sample.gaps_s],
                color=colour,
                alpha=0.75,
                linewidth=1.1,
                label=f"{_name(record, several)} ({len(rounds)} rounds)" if number == 0 else None,
            )
    first.set_xticks(range(len(timed)), [str(i + 1) for i in range(len(timed))])
    first.set_xlim(-0.6, len(timed) - 0.4)
    first.set_xlabel("point")
    first.set_ylabel("first token (ms)")
    first.set_title("TTFT", fontsize=9)
    rest.set_xlabel("generated token position")
    rest.set_ylabel("time since the previous token (ms)")
    rest.set_title("Per-token latency, all timed rounds overlaid", fontsize=9)
    rest.grid(alpha=0.3)
    _legend_outside(rest)
    for ax in (first, rest):
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    return Plot(
        "token_timeline",
        "Per-token timeline",
        fig,
        "Each line is one timed round: the time each generated token took after the one before it "
        "(left: the first token, one dot per round). Warm-up effects show as a rising or falling start, "
        "KV-cache growth as a slope, jitter as spread between the rounds.",
    )


def _kl_series(record: Record):
    gate = record.correctness
    floor = gate.noise_floor if gate and gate.noise_floor else None
    for prompt in gate.prompts if gate else []:
        kls = prompt.position_kl
        if not kls or not floor:
            continue
        diverge = prompt.free_divergence if prompt.free_divergence is not None else prompt.forced_first_violation
        yield prompt.prompt, prompt.kind, [k / floor for k in kls], diverge


def gate_kl(records: list[Record]) -> Optional[Plot]:
    """Per-position KL of each point's gate prompts as multiples of the noise floor, log scale, with the
    first divergence (free-running token differs, or a teacher-forced top-k violation) marked."""
    gated = [r for r in records if r.status == "ok" and any(True for _ in _kl_series(r))][:MAX_POINTS]
    if not gated:
        return None
    several = len({r.scenario for r in gated}) > 1
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 4))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = ["-", "--", ":", "-."]
    smallest = 1e-2  # a position where both agree exactly (KL 0) is drawn at the bottom of the axis
    marked = False
    for index, record in enumerate(gated):
        colour = colours[index % len(colours)]
        for number, (prompt, kind, ratios, diverge) in enumerate(_kl_series(record)):
            shown = [max(r, smallest) for r in ratios]
            ax.plot(
                range(len(shown)),
                shown,
                color=colour,
                linestyle=styles[number % len(styles)],
                linewidth=1.2,
                label=f"{_name(record, several)} prompt {prompt} ({kind})",
            )
            if diverge is not None and diverge < len(shown):
                ax.plot(
                    [diverge],
                    [shown[diverge]],
                    marker="X",
                    markersize=9,
                    color=colour,
                    markeredgecolor="black",
                    linestyle="none",
                    label=None if marked else "first divergence",
                )
                marked = True
    for name, (level, colour) in KL_LINES.items():
        ax.axhline(level, color=colour, linestyle=":", linewidth=1)
        ax.annotate(
            f"{name} ({level:g}x)",
            (1.0, level),
            xycoords=("axes fraction", "data"),
            xytext=(-4, 2),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=7,
            color=colour,
        )
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_yscale("log")
    ax.set_ylim(bottom=smallest)
    ax.set_xlabel("generated token position (teacher-forced)")
    ax.set_ylabel("KL(reference || engine) / noise floor")
    ax.set_title("Correctness gate: where each engine parts from the reference")
    ax.grid(alpha=0.3, which="both")
    _legend_outside(ax)
    fig.tight_layout()
    return Plot(
        "gate_kl",
        "Gate: per-position KL against the noise floor",
        fig,
        "KL between the HF reference and the engine at every generated position, as a multiple of the "
        "noise floor (HF bf16 vs fp32). The gate drifts above 5x on average and fails above 100x; X marks "
        "where a prompt's free-running tokens first differ from the reference's (or its first top-k "
        "violation). Engines with top-1 tokens only (static NPU pipelines) have no KL and are not drawn.",
    )


def build(records: list[Record]) -> list[Plot]:
    return [plot for plot in (token_timeline(records), gate_kl(records)) if plot is not None]
