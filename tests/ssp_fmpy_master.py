"""Run an export-ssp package in a master built on FMPy; a subprocess of test_fmu_ssp_masters.

    python ssp_fmpy_master.py MODE PACKAGE.ssp STEPS OUT.npz COMPONENT:VARIABLE ...

MODE is
  read-first  a hand-written Jacobi master (FMI 2 or 3): at each communication point read
              every connected output, then set every input, then step every FMU;
  set-first   the same master, but per FMU in turn (the rigid side first): read the outputs
              feeding it and set its inputs, so the next FMU's inputs are read after the
              previous FMU's inputs changed (OMSimulator's order);
  fmpy-ssp    fmpy.ssp.simulation's own functions (read_ssd, instantiate_fmu, do_step: set
              inputs, doStep, get outputs, FMU by FMU, then the connections), with every
              connector starting at its .ssd start value instead of fmpy.ssp's 0.0 (FMI 2).

The macro step is the package's (OMSimulator's FixedStepMaster annotation), the start values
its parameter bindings. Writes OUT.npz with `t` and one array per COMPONENT:VARIABLE read after
every step; leaves with os._exit (the FMUs' embedded interpreter is finalised by nobody).
"""

import os
import sys
import zipfile
from xml.etree import ElementTree

import numpy as np

NS = {"ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
      "ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues",
      "oms": "https://raw.githubusercontent.com/OpenModelica/OMSimulator/master/schema/oms.xsd"}


def read_package(package):
    """(components name -> source, links, starts {(component, connector): value}, step)."""
    with zipfile.ZipFile(package) as z:
        root = ElementTree.fromstring(z.read("SystemStructure.ssd"))
    components, starts = {}, {}
    for c in root.iterfind(".//ssd:Component", NS):
        components[c.get("name")] = c.get("source")
        for p in c.iterfind(".//ssv:Parameter", NS):
            starts[(c.get("name"), p.get("name"))] = float(p[0].get("value"))  # Real only
    links = [(w.get("startElement"), w.get("startConnector"), w.get("endElement"),
              w.get("endConnector")) for w in root.iterfind(".//ssd:Connection", NS)]
    step = float(root.find(".//oms:FixedStepMaster", NS).get("stepSize"))
    return components, links, starts, step


class Fmu:
    """One component through FMPy's FMU2Slave / FMU3Slave."""

    def __init__(self, name, path):
        import fmpy
        from fmpy.fmi2 import FMU2Slave
        from fmpy.fmi3 import FMU3Slave

        md = fmpy.read_model_description(path)
        self.version = 3 if md.fmiVersion.startswith("3") else 2
        self.vr = {v.name: v.valueReference for v in md.modelVariables}
        kind = FMU3Slave if self.version == 3 else FMU2Slave
        self.slave = kind(guid=md.guid, unzipDirectory=fmpy.extract(path),
                          modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
        self.slave.instantiate()

    def get(self, names):
        refs = [self.vr[n] for n in names]
        return self.slave.getFloat64(refs) if self.version == 3 else self.slave.getReal(refs)

    def set(self, names, values):
        refs = [self.vr[n] for n in names]
        if self.version == 3:
            self.slave.setFloat64(refs, list(values))
        else:
            self.slave.setReal(refs, list(values))


def hand_written(package, steps, names, order):
    components, links, starts, h = read_package(package)
    work = os.path.dirname(os.path.abspath(package))
    with zipfile.ZipFile(package) as z:
        z.extractall(work)
    fmus = {name: Fmu(name, os.path.join(work, source)) for name, source in components.items()}
    t = 0.0
    for name, fmu in fmus.items():
        if fmu.version == 2:
            fmu.slave.setupExperiment(startTime=t)
            fmu.slave.enterInitializationMode()
        else:
            fmu.slave.enterInitializationMode(startTime=t)
        for (owner, connector), value in starts.items():
            if owner == name:
                fmu.set([connector], [value])
    for fmu in fmus.values():
        fmu.slave.exitInitializationMode()

    def transfer():
        if order == "read-first":
            values = [fmus[a].get([a_name])[0] for a, a_name, _, _ in links]
            for (_, _, b, b_name), value in zip(links, values):
                fmus[b].set([b_name], [value])
            return
        for name in sorted(fmus, key=lambda n: n != "rigid"):  # set-first, rigid first
            for a, a_name, b, b_name in links:
                if b == name:
                    fmus[b].set([b_name], fmus[a].get([a_name]))

    rows = []
    for k in range(steps):
        transfer()
        for fmu in fmus.values():
            fmu.slave.doStep(currentCommunicationPoint=t, communicationStepSize=h)
        t = (k + 1) * h
        rows.append([fmus[c].get([v])[0] for c, v in (n.split(":", 1) for n in names)])
    return h, rows


def fmpy_ssp(package, steps, names):
    from fmpy.ssp import simulation as sim

    ssd = sim.read_ssd(package)
    sim.add_path(ssd.system)
    components = sim.find_components(ssd.system)
    _, _, starts, h = read_package(package)
    pairs = sim.get_connections(ssd.system)  # (start, end) connectors; a flat system
    unzipdir = sim.extract(package)
    for connector in sim.find_connectors(ssd.system):
        connector.value = starts.get((connector.parent.name, connector.name), 0.0)
    for component in components:
        sim.instantiate_fmu(component, unzipdir, 0.0, steps * h)
    by_name = {c.name: c for c in components}
    rows, t = [], 0.0
    for k in range(steps):
        for component in components:
            sim.do_step(component, t, h)
        for a, b in pairs:
            b.value = a.value
        t = (k + 1) * h
        rows.append([sim.get_value(by_name[c], v) for c, v in (n.split(":", 1) for n in names)])
    return h, rows


def main(mode, package, steps, out, *names):
    steps = int(steps)
    if mode == "fmpy-ssp":
        h, rows = fmpy_ssp(package, steps, names)
    elif mode in ("read-first", "set-first"):
        h, rows = hand_written(package, steps, names, mode)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    values = np.array(rows)
    np.savez(out, t=h * np.arange(1, steps + 1),
             **{name: values[:, j] for j, name in enumerate(names)})


if __name__ == "__main__":
    try:
        main(*sys.argv[1:])
        code = 0
    except BaseException as exc:  # noqa: BLE001 - report, then leave without finalisation
        import traceback

        traceback.print_exc()
        print(f"ssp_fmpy_master: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
