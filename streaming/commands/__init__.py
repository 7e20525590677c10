"""The ``groupscope`` command line: ``cli.py`` is the entry point and each command lives in its own module (``run``
also holds ``heartbeat`` and ``status``; ``demo_stack`` is the embedded stack the demo starts, ``status_view`` the
tables ``status`` and the demo print). Commands may use every other part of ``streaming``; nothing imports them.
"""
