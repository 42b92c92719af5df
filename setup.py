"""The compiled kernels of the ridge oracle (everything else is in pyproject.toml)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("regcb_stream._ridge", ["regcb_stream/_ridge.c"],
                             extra_compile_args=["-O3", "-std=c99"])])
