"""Run by Python at start-up in the processes Spark's JVM starts in local mode (this folder is on their path).

Takes the archives that only slow those processes down off their path (see ``streaming.spark.import_path``), then
hands over to the ``sitecustomize`` this one hides, if the environment has one. It never fails a process: an
error here would only print a warning in every Spark worker's output.
"""


def _run() -> None:
    import importlib
    import os
    import signal
    import sys

    # The driver starts the JVM with SIGTERM ignored (streaming.spark.session), and processes inherit that; Spark
    # stops its Python processes with SIGTERM, so they take the default back.
    if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from streaming.spark.import_path import prune_import_path

        prune_import_path()
    except Exception:  # noqa: BLE001 - see the docstring: the process goes on with the path it has
        pass
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    this = sys.modules.pop("sitecustomize", None)
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    except Exception:  # noqa: BLE001 - the other module's own error, reported as Python would
        import traceback

        traceback.print_exc()
    finally:
        # Python's import of this module expects to find a module under this name when it returns.
        sys.modules.setdefault("sitecustomize", this)


_run()
