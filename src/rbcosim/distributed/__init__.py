"""Multi-process co-simulation: the rigid side in `rbcosim serve`, each flexible body in its own
`rbcosim flex` process, joined over ZeroMQ (interfaces/PROTOCOL.md).

`flex_solver.run_flex_solver` is a flexible solver's client loop; `driver.run_distributed` is
what `rbcosim cosim` runs: start (or connect to) a server, start the flexible solvers, watch,
merge their result columns with the server's into the in-process run's table.
"""
