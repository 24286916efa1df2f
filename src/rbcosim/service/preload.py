"""What the session workers' fork server loads once, before it forks any worker.

`rbcosim.service.workers` starts every session worker from a fork server; importing this
module there loads the service, the rigid core and its compiled kernels (from numba's on-disk
cache, compiling them on the very first run), so that each worker starts with them already in
memory — shared copy-on-write — and a `create_session` costs the model build only.
"""

from rbcosim.service import workers  # noqa: F401 - the worker's own code
from rbcosim.warmup import warm_up

warm_up(report=lambda *_: None)
