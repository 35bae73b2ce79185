"""Ships the agent's sources inside the package, as `rtbench/agent/`.

An installed rtbench builds its agent on first use, so the wheel must carry
the C sources; in a checkout `agent/` stays their only copy (nothing is
duplicated in the tree: the copy is made in the build directory).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

AGENT = Path(__file__).resolve().parent / "agent"


class BuildPyWithAgent(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return  # an editable install finds the checkout's agent/ itself
        dest = Path(self.build_lib) / "rtbench" / "agent"
        shutil.rmtree(dest, ignore_errors=True)  # no file deleted from agent/ lingers
        for f in sorted(AGENT.rglob("*")):
            rel = f.relative_to(AGENT)
            if f.is_file() and not any(part.startswith(".") for part in rel.parts):
                self.mkpath(str((dest / rel).parent))
                self.copy_file(str(f), str(dest / rel))


setup(
    cmdclass={"build_py": BuildPyWithAgent},
    # Apart from the agent's CMake trees in build/<flavor>.
    options={"build": {"build_base": "build/python"}},
)
