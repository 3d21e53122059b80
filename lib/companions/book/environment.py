"""Settings that make the book's runs faster on a shared or small machine, set explicitly by the
commands that start chapters' kernels (``python -m companions run | build | grade``, the test
suite's ``conftest.py``), never by importing the library.

- **OpenMP's waiting threads.** Torch's threads wait for each other at the end of every parallel
  region, by default spinning. When other processes hold the cores, one of a chapter's threads is
  often descheduled and the other spins out its time slice: on a busy 2-core machine a 2-thread
  trainer ran 5-400x slower than with sleeping waiters. On a busy machine (the 1-minute load
  average leaves less than one core free) :func:`tune` sets ``OMP_WAIT_POLICY=PASSIVE`` where it
  is not set; on an idle one spinning is faster and is left alone.
- **Huge pages for large tensors.** ``THP_MEM_ALLOC_ENABLE=1`` (where not set) makes torch place
  its large CPU tensors on transparent huge pages: trainers that allocate large tensors at every
  step spent much of their time mapping and zeroing fresh 4 KiB pages (``fine-labels-fine``: 33 of
  87 s in the OS). Numbers do not change.

Both act in the processes started afterwards (the kernels), and in this one only if torch is not
loaded yet. In a notebook of your own, export them before starting Jupyter.
"""

from __future__ import annotations

import os


def busy(cores: int, load: float) -> bool:
    """Whether a 1-minute load average of ``load`` leaves less than one of ``cores`` free."""
    return load > cores - 1


def tune(environ=None) -> dict[str, str]:
    """Set the two variables in ``environ`` (default ``os.environ``) where they are not set, the
    wait policy only on a busy machine; returns what it set."""
    environ = os.environ if environ is None else environ
    done = {}
    if "OMP_WAIT_POLICY" not in environ:
        try:
            cores, load = len(os.sched_getaffinity(0)), os.getloadavg()[0]
        except (AttributeError, OSError):  # pragma: no cover (no affinity or load average)
            cores, load = 1, 0.0
        if busy(cores, load):
            done["OMP_WAIT_POLICY"] = environ["OMP_WAIT_POLICY"] = "PASSIVE"
    if "THP_MEM_ALLOC_ENABLE" not in environ:
        done["THP_MEM_ALLOC_ENABLE"] = environ["THP_MEM_ALLOC_ENABLE"] = "1"
    return done
