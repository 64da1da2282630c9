"""The ground floor for processes (docs/architecture.md, "Packages and layers").

- :mod:`.procfs`: every read of ``/proc`` about a process -- its ``stat`` fields, start
  time (with the pid, a process's identity), children and descendants, cgroup -- and of
  the machine's boot id; no other module opens ``/proc/<pid>/...``
  (``tests/test_layering.py``);
- :mod:`.groups`: process groups (alive, signal, members) and ``prctl``;
- :mod:`.guarded`: commands in their own process group that never outlive ``duet run``.

Standard library only; execute/, hosts, noise/ and schedule/ build on it.
"""
