"""An asv-style suite over the known-work package (``knownver`` of ``../../v_a`` or ``../../v_b``).

Written as asv suites are: classes with ``params`` / ``param_names``, ``setup``
and ``teardown`` taking the parameters, ``setup_cache``, a module-level
``time_*`` function with asv attributes, and kinds duet micro does not time
(``mem_*``, ``peakmem_*``, ``track_*``), which it lists as skipped.
"""

import knownver


class TimeKnown:
    params = [["aa", "p10", "x2"], ["5us", "100us"]]
    param_names = ["variant", "size"]
    timeout = 60

    def setup(self, variant, size):
        self.work = getattr(knownver, variant + "_" + size)

    def time_work(self, variant, size):
        self.work()

    def teardown(self, variant, size):
        del self.work


class TimeCached:
    def setup_cache(self):
        return list(range(1000))

    def setup(self, data):
        self.total = 0

    def time_sum(self, data):
        self.total += sum(data)


def time_module_level():
    knownver.aa_100us()


time_module_level.number = 10  # an asv hint: recorded, not used (duet micro calibrates)


def mem_list():
    return [0] * 1000


def peakmem_list():
    return [0] * 100_000


def track_steps():
    return knownver.WORK["aa_100us"]
