"""``--isolation none``: every launch in this process, with the runner's caches; no protection (an engine
that crashes ends the run), the least overhead."""

from __future__ import annotations

from typing import Callable, Optional

from harness.run.launchers.launcher import Launcher
from harness.run.steps.launch_context import quiet


class InProcessLauncher(Launcher):
    def launch(
        self,
        scenario,
        point,
        *,
        first_launch: bool = True,
        on_phase: Callable[[str], None] = quiet,
        on_round: Optional[Callable[[int], None]] = None,
    ):
        from harness.run import steps

        return steps.execute(
            self.settings,
            self.caches,
            scenario,
            point,
            first_launch=first_launch,
            on_phase=on_phase,
            log=self.log,
            on_round=on_round,
        )

    def close(self) -> None:
        """Nothing to end: the runner's caches outlive every launch, as they should."""
