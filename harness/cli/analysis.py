"""``harness lm-eval`` and ``harness routing``: the commands that drive other tools' analyses (lm-eval's
command line, the MoE routing study) rather than sweeps."""

from __future__ import annotations

import argparse
import sys


def add_parsers(commands) -> None:
    commands.add_parser(
        "lm-eval",
        help="lm-eval's command line with --model harness registered and the shipped "
        "tasks on its include path (all arguments go to lm-eval); --install-hook makes the plain "
        "`lm_eval --model harness` work in this environment",
        add_help=False,
    )
    routing = commands.add_parser(
        "routing",
        help="MoE routing statistics and the G x C expert-capacity table from real router traces of an HF MoE model",
    )
    routing.add_argument("model", metavar="MODEL", help="HF MoE checkpoint directory or a tiny model name")
    routing.add_argument("--prompt-len", type=int, default=256, help="tokens per prompt (default 256)")
    routing.add_argument(
        "--prompts",
        type=int,
        default=8,
        help="prompts per set; calibration and evaluation sets are disjoint (default 8)",
    )
    routing.add_argument("--chunk", type=int, default=256, help="prefill chunk the capacities apply to (default 256)")
    routing.add_argument("--capacities", type=int_list, default=[128, 64, 32, 16], metavar="C,...")
    routing.add_argument("--groups", type=int_list, default=[1, 2, 4], metavar="G,...", help="experts per graph")
    routing.add_argument("--overlap-k", type=int, default=4, help="K of Overlap@K (default 4)")
    routing.add_argument("--cache-dir", default=None, metavar="DIR")
    routing.add_argument("-o", "--output", default="routing", metavar="DIR", help="CSV directory (default routing)")


def lm_eval(args: list[str]) -> int:
    from harness import lm_eval_hook

    if args == ["--install-hook"]:
        import sysconfig

        print(f"wrote {lm_eval_hook.write_pth(sysconfig.get_paths()['purelib'])}")
        return 0
    from harness.accuracy import evaluate

    evaluate._offline()
    lm_eval_hook.register()
    if not any(a == "--include_path" or a.startswith("--include_path=") for a in args):
        args = [*args, "--include_path", str(evaluate.TASKS_DIR)]
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm_eval", *args]
    cli_evaluate()
    return 0


def int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def routing(args) -> int:
    from harness.moe import study as routing_study
    from harness.report.render import markdown_table

    study = routing_study.run(
        args.model,
        args.prompt_len,
        args.prompts,
        args.chunk,
        args.capacities,
        args.groups,
        args.overlap_k,
        args.cache_dir,
    )
    files = routing_study.write(study, args.output)
    print(markdown_table(study.layers))
    print(markdown_table(study.grid, limit=len(study.grid)))
    print(f"wrote {', '.join(map(str, files))}")
    return 0
