"""What a command imports (issue #49): ``inspect`` and ``score`` of an ns-2 trace and of a capture,
each run as a user runs it under ``python -X importtime``, import none of the heavy packages they
do not need, and ldanalyze's own modules they import are the ones listed here, so the list does
not grow unnoticed. Also: the package's import leaves the cyclic collector as it found it
(ldanalyze/__init__.py turns it off while the package imports).

When a module of ours is added or moved on purpose, update OWN_MODULES with the list that
``python -m tests.test_imports`` prints (run from the repository's top).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import ROOT, TRACES

COMMANDS = {
    "inspect, ns-2": ("inspect", TRACES / "wlh_cbr_1flow_bursty.tr.gz"),
    "score, ns-2": ("score", TRACES / "wlh_cbr_1flow_bursty.tr.gz"),
    "inspect, pcap": ("inspect", TRACES / "captures" / "lab_receiver.pcap"),
    "score, pcap": ("score", TRACES / "captures" / "lab_receiver.pcap"),
}
# heavy packages no inspect or score of these inputs needs: plots, the learned LDA's training
# stack, Dask, notebooks, the qlog reader's schemas, Parquet output, numba's BLAS probe
HEAVY = (
    "matplotlib",
    "sklearn",
    "skops",
    "dask",
    "distributed",
    "IPython",
    "tqdm",
    "msgspec",
    "pyarrow.parquet",
    "scipy.linalg",
)
OWN_MODULES = frozenset(
    """
    ldanalyze ldanalyze.analysis ldanalyze.clocks ldanalyze.consensus ldanalyze.errors
    ldanalyze.formatting ldanalyze.gates ldanalyze.kernel_cache ldanalyze.output ldanalyze.packets
    ldanalyze.sender_evidence ldanalyze.sender_timeline ldanalyze.specs ldanalyze.threads
    ldanalyze.tiering ldanalyze.timeline ldanalyze.version
    ldanalyze.batch ldanalyze.batch.cache ldanalyze.batch.jobs ldanalyze.batch.results ldanalyze.batch.running
    ldanalyze.cli ldanalyze.cli.analysing ldanalyze.cli.inspecting ldanalyze.cli.learning ldanalyze.cli.options
    ldanalyze.cli.parser ldanalyze.cli.startup ldanalyze.cli.suites ldanalyze.cli.writing
    ldanalyze.control ldanalyze.control.base ldanalyze.control.ldaplus ldanalyze.control.models
    ldanalyze.control.newreno ldanalyze.control.sent_rate ldanalyze.control.tfrc ldanalyze.control.westwood
    ldanalyze.control.window ldanalyze.control.xrtp
    ldanalyze.io ldanalyze.io.detect ldanalyze.io.labels ldanalyze.io.text
    ldanalyze.io.capture ldanalyze.io.capture.air ldanalyze.io.capture.chain_truth ldanalyze.io.capture.clockrate
    ldanalyze.io.capture.describe ldanalyze.io.capture.fields ldanalyze.io.capture.flows ldanalyze.io.capture.frame
    ldanalyze.io.capture.linklayer ldanalyze.io.capture.outages ldanalyze.io.capture.payload
    ldanalyze.io.capture.pcap ldanalyze.io.capture.record ldanalyze.io.capture.rtp ldanalyze.io.capture.rtp_streams
    ldanalyze.io.capture.sequences ldanalyze.io.capture.source ldanalyze.io.capture.split ldanalyze.io.capture.tcp
    ldanalyze.io.capture.tcp_sender ldanalyze.io.capture.tcp_sender_kernel ldanalyze.io.capture.tunnels
    ldanalyze.io.capture.vantage ldanalyze.io.capture.walk
    ldanalyze.io.ns2 ldanalyze.io.ns2.cmu_scan ldanalyze.io.ns2.sender ldanalyze.io.ns2.wired ldanalyze.io.ns2.wireless
    ldanalyze.lda ldanalyze.lda.backlog ldanalyze.lda.base ldanalyze.lda.baselines ldanalyze.lda.interarrival
    ldanalyze.lda.kernels ldanalyze.lda.learned ldanalyze.lda.learned.calibration ldanalyze.lda.learned.features ldanalyze.lda.learned.models
    ldanalyze.lda.learned.trees ldanalyze.lda.policer ldanalyze.lda.radio ldanalyze.lda.rott ldanalyze.lda.rtt
    ldanalyze.lda.sender ldanalyze.lda.sender_policer ldanalyze.lda.xrtp ldanalyze.lda.zbs
    ldanalyze.report ldanalyze.report.ci ldanalyze.report.export ldanalyze.report.html ldanalyze.report.inspect_text
    ldanalyze.report.plots ldanalyze.report.plots.scores ldanalyze.report.plots.sender ldanalyze.report.plots.studies
    ldanalyze.report.plots.style ldanalyze.report.plots.timelines ldanalyze.report.tables ldanalyze.report.text
    ldanalyze.scoring ldanalyze.scoring.bootstrap ldanalyze.scoring.losses ldanalyze.scoring.metrics
    ldanalyze.scoring.rates ldanalyze.scoring.throughput
    """.split()
)


# the command as ``python -m ldanalyze`` runs it, writing the modules it holds as it exits (its
# exit handlers run: ldanalyze.cli.run): -X importtime also lists an import that failed, such as
# numba's BLAS probe, which ldanalyze/cli/startup.py answers with "no BLAS"
RUN = (
    "import atexit, os, runpy, sys\n"
    "atexit.register(lambda: open(os.environ['HELD_MODULES'], 'w').write(' '.join(sys.modules)))\n"
    "runpy.run_module('ldanalyze', run_name='__main__', alter_sys=True)\n"
)


def imported(command: str, path, held) -> dict[str, str]:
    """The modules a fresh ``ldanalyze COMMAND PATH`` imports (``-X importtime``'s lines on stderr,
    less the imports that failed), each with the chain of modules that imported it; the kernels'
    choice left to the command as a user's is (``LDANALYZE_KERNELS`` unset)."""
    env = {k: v for k, v in os.environ.items() if k != "LDANALYZE_KERNELS"}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", RUN, command, str(path)],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT), "HELD_MODULES": str(held)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    kept = set(held.read_text().split())
    lines = [line.rsplit("|", 1)[1] for line in done.stderr.splitlines() if line.startswith("import time:")]
    tree = [(len(line) - len(line.lstrip()), line.strip()) for line in lines]
    chains = {}
    for i, (depth, name) in enumerate(tree):  # a module's importer: the next line less indented
        chain = [name]
        for outer, importer in tree[i + 1 :]:
            if outer < depth:
                chain.append(importer)
                depth = outer
            if depth == 1:  # imported by the command's top level
                break
        chains[name] = " <- ".join(chain)
    return {name: chain for name, chain in chains.items() if name in kept}


@pytest.fixture(scope="module")
def modules(tmp_path_factory) -> dict[str, dict[str, str]]:
    held = tmp_path_factory.mktemp("imports") / "modules"
    return {name: imported(*command, held) for name, command in COMMANDS.items()}


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_imports_no_heavy_package_it_does_not_need(modules, name):
    found = [chain for m, chain in sorted(modules[name].items()) if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert not found, f"ldanalyze {name} imports {found}: import them where they are used (a lazy import)"


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_imports_only_the_listed_modules_of_ours(modules, name):
    own = {m for m in modules[name] if m == "ldanalyze" or m.startswith("ldanalyze.")}
    added = sorted(own - OWN_MODULES)
    assert not added, (
        f"ldanalyze {name} now imports {added}. If a command needs them, add them to OWN_MODULES in "
        "tests/test_imports.py (`python -m tests.test_imports` prints the whole list); if not, import "
        "them where they are used"
    )


def test_the_commands_still_import_every_listed_module(modules):
    """A module no longer imported leaves the list, so the list says what the commands import."""
    gone = sorted(OWN_MODULES.difference(*modules.values()))
    assert not gone, f"no command imports {gone} any more: take them out of OWN_MODULES in tests/test_imports.py"


@pytest.mark.parametrize(
    "before, after",
    [
        ("", "gc.isenabled() and gc.get_freeze_count() == 0"),
        ("gc.disable()", "not gc.isenabled()"),
        # an object the caller froze stays frozen: in no generation the collector scans
        ("kept = [[]]; gc.freeze()", "gc.isenabled() and not any(o is kept for o in gc.get_objects())"),
    ],
)
def test_importing_the_package_leaves_the_collector_as_it_was(before, after):
    code = f"import gc; {before}\nimport ldanalyze\nassert {after}, (gc.isenabled(), gc.get_freeze_count())"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_garbage_made_before_the_import_is_still_collected():
    code = (
        "import gc, weakref\n"
        "class Node: pass\n"
        "a, b = Node(), Node(); a.other, b.other = b, a; gone = weakref.ref(a); del a, b\n"
        "import ldanalyze\n"
        "gc.collect()\n"
        "assert gone() is None\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]


if __name__ == "__main__":  # the list OWN_MODULES should hold: every module of ours the commands import
    import pathlib
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        found = {m for c in COMMANDS.values() for m in imported(*c, pathlib.Path(folder) / "modules")}
    print("\n".join(sorted(m for m in found if m.split(".")[0] == "ldanalyze")))
