"""What the session workers' fork server loads once, before it forks any worker.

`rbcosim.service.workers` starts every session worker from a fork server; importing this
module there loads the service, the scenario reader, the rigid and flexible cores (the C core
`rbcosim._core` and numpy/scipy with it), so that each worker starts with them already in
memory — shared copy-on-write — and a `create_session` costs the model build only.

The cyclic garbage collector is paused while they load and then leaves what they made alone
(`rbcosim.gc_pause.loading`): a worker's collections scan only its own objects, and do not
write to the shared pages.
"""

from rbcosim.gc_pause import loading, program_run

program_run()  # the fork server's own process
with loading():
    # scipy: the solver modules import it where they use it (model builds); loaded once here
    import scipy.linalg
    import scipy.sparse.csgraph  # noqa: F401

    import rbcosim._core
    import rbcosim.cosim.rigid_side
    import rbcosim.flex.runtime.body
    import rbcosim.scenario.loader  # noqa: F401 - the scenario reader
    from rbcosim.service import worker_process  # noqa: F401 - the worker's own code
