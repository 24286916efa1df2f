"""Build of the C core (rbcosim._core): every .c file under src/rbcosim/librbcosim.

Strict IEEE arithmetic: no fused multiply-add contraction and no fast-math, so results do not
depend on the compiler's choices and match the documented formulas bit for bit across builds.
"""

import compileall
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CORE = Path("src/rbcosim/librbcosim")


class BuildCore(build_ext):
    """The C core; built in place (an editable install) also the package's bytecode, which pip
    writes only for regular installs: processes started with PYTHONDONTWRITEBYTECODE set (as
    in many containers) then load it instead of compiling every module at each start."""

    def run(self):
        super().run()
        if self.inplace:
            compileall.compile_dir("src/rbcosim", quiet=1)


setup(
    cmdclass={"build_ext": BuildCore},
    ext_modules=[
        Extension(
            "rbcosim._core",
            sources=sorted(p.as_posix() for p in CORE.rglob("*.c")),
            include_dirs=[CORE.as_posix()],
            libraries=["dl"],  # dlopen/dlsym of the libzmq pyzmq loaded (librbcosim/wire)
            extra_compile_args=["-std=c11", "-O2", "-ffp-contract=off", "-fno-fast-math",
                                "-Wall", "-Wextra", "-Wno-unused-parameter"],
        )
    ],
)
