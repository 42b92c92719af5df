"""The compiled kernels: ridge oracle, random features, GB5 trees oracle, VW text tokenizer,
DSJSON reader (everything else is in pyproject.toml)."""

from setuptools import Extension, setup

ARGS = ["-O3", "-std=c99", "-ffp-contract=off"]  # no FMA: the same numbers everywhere
SHARED = ["regcb_stream/_buffers.h"]  # included by the kernels (include_dirs) and _scan
READERS = ["regcb_stream/io/_readers.h"]  # included by the two readers
setup(ext_modules=[
    Extension("regcb_stream.oracles._ridge", ["regcb_stream/oracles/_ridge.c"],
              depends=SHARED, include_dirs=["regcb_stream"], extra_compile_args=ARGS),
    Extension("regcb_stream.features._features", ["regcb_stream/features/_features.c"],
              depends=SHARED, include_dirs=["regcb_stream"], extra_compile_args=ARGS),
    Extension("regcb_stream.oracles._trees", ["regcb_stream/oracles/_trees.c"],
              depends=SHARED, include_dirs=["regcb_stream"], extra_compile_args=ARGS),
    Extension("regcb_stream.io._scan", ["regcb_stream/io/_scan.c"], depends=SHARED + READERS,
              include_dirs=["regcb_stream"], extra_compile_args=ARGS),
    Extension("regcb_stream.io._dsjson", ["regcb_stream/io/_dsjson.c"], depends=READERS,
              extra_compile_args=ARGS),
])
