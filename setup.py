"""Build of the C core (rbcosim._core): every .c file under src/rbcosim/librbcosim.

Strict IEEE arithmetic: no fused multiply-add contraction and no fast-math, so results do not
depend on the compiler's choices and match the documented formulas bit for bit across builds.
"""

from pathlib import Path

from setuptools import Extension, setup

CORE = Path("src/rbcosim/librbcosim")

setup(
    ext_modules=[
        Extension(
            "rbcosim._core",
            sources=sorted(p.as_posix() for p in CORE.rglob("*.c")),
            include_dirs=[CORE.as_posix()],
            extra_compile_args=["-std=c11", "-O2", "-ffp-contract=off", "-fno-fast-math",
                                "-Wall", "-Wextra", "-Wno-unused-parameter"],
        )
    ],
)
