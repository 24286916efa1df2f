"""Child process of test_fmu_missing_package.py: instantiate an FMU (FMI 2 or 3, FMPy's
low-level API, logging on) in a Python where the package ``blocked`` cannot be imported, and
print each FMI log message as it comes and the outcome, as JSON lines.

    python fmu_missing_package.py FMU UNZIPDIR PACKAGE
"""
import json
import os
import sys

path, unzipdir, blocked = sys.argv[1:4]
import fmpy
from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
from fmpy.fmi3 import FMU3Slave


class Block:
    """Import hook: ``blocked`` and its submodules are not installed."""

    def find_spec(self, name, path=None, target=None):
        if name == blocked or name.startswith(blocked + "."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


md = fmpy.read_model_description(path)
fmpy.extract(path, unzipdir)


class Log(list):
    """The FMI log, printed as it comes."""

    def append(self, message):  # as it comes: a crashing wrapper must not lose it
        print(json.dumps({"log": message}), flush=True)
        super().append(message)


log = Log()
common = {"guid": md.guid, "unzipDirectory": unzipdir,
              "modelIdentifier": md.coSimulation.modelIdentifier, "instanceName": "rb"}
for name in [m for m in sys.modules if m == blocked or m.startswith(blocked + ".")]:
    del sys.modules[name]
sys.meta_path.insert(0, Block())
try:
    if md.fmiVersion == "2.0":
        fmu = FMU2Slave(**common)
        callbacks = fmi2CallbackFunctions()
        callbacks.logger = fmi2CallbackLoggerTYPE(
            lambda env, name, status, category, message: log.append(message.decode()))
        callbacks.allocateMemory = fmpy.fmi2.defaultCallbacks.allocateMemory
        callbacks.freeMemory = fmpy.fmi2.defaultCallbacks.freeMemory
        fmu.instantiate(callbacks=callbacks, loggingOn=True)
        fmu.setupExperiment(startTime=0.0)
    else:
        fmu = FMU3Slave(**common)
        fmu.instantiate(loggingOn=True,
                        logMessage=lambda env, status, category, message: log.append(message.decode()))
    outcome = "instantiated"
except Exception as exc:  # noqa: BLE001
    outcome = f"failed: {exc}"
print(json.dumps({"outcome": outcome, "log": log}), flush=True)
# What is checked — the host survives the failing instantiation and the log names the package —
# is done. pythonfmu 0.7's FMI 2 wrapper can abort later, at interpreter exit after a failed
# fmi2Instantiate (glibc "corrupted double-linked list", seen once in a clean-clone CI run);
# leave without finalisation so that upstream exit-time fault does not mask this check.
os._exit(0)
