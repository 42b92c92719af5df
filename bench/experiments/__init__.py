"""The experiments behind the reports of ``docs/results/``, one module each.

Each runs as ``python -m bench.experiments.<name> [args]`` from the repository's root; the
order they run in, with what each reads and writes, is :mod:`bench.registry`'s
(``python -m bench.registry [NAME ...]``, ``--list``).
"""
