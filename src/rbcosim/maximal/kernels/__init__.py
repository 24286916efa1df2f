"""The rigid maximal-coordinate core's Python side: the tables (NamedTuples of arrays) that
describe a system to the C core (`librbcosim/rigid`, built at install as `rbcosim._core`), and
thin wrappers that call it (`handle`: one call per evaluation or per run of steps)."""
