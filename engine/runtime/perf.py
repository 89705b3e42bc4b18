"""A hardware counter of instructions retired by the calling thread, through Linux's ``perf_event_open`` — the
clock ``--clock instructions`` reads (torch-free: ctypes only).

Instructions retired by an action do not change when other work shares the machine: a busy sibling
hyper-thread, a cold cache or a time slice makes each instruction take longer, not the action take more of
them. ``timing.ActionClock`` turns counts into milliseconds with a quiet calibration (the fastest of a few
timed trials of the same kind of work, see ``timing.calibrate_instructions``).

Where the counter is refused — most containers and virtual machines: ``kernel.perf_event_paranoid`` ≥ 3,
a seccomp profile, or no hardware counters exposed to the guest — ``unavailable()`` says why, and the run
is refused before it starts.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from functools import cache

SYSCALL_NUMBERS = {"x86_64": 298, "aarch64": 241}
"""``__NR_perf_event_open`` per architecture."""
PERF_TYPE_HARDWARE = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
ATTR_SIZE = 64
"""``PERF_ATTR_SIZE_VER0``: every kernel since 2.6.31 accepts it."""
EXCLUDE_KERNEL, EXCLUDE_HV = 1 << 5, 1 << 6
PERF_FLAG_FD_CLOEXEC = 1 << 3
PARANOID = "/proc/sys/kernel/perf_event_paranoid"


class CounterUnavailable(OSError):
    """The instructions counter cannot be opened here; the message says why."""


def _attributes() -> ctypes.Array:
    """``struct perf_event_attr`` (its first 64 bytes): type, size, config, then the flags word at byte 40."""
    buffer = ctypes.create_string_buffer(ATTR_SIZE)
    struct.pack_into("=IIQ", buffer, 0, PERF_TYPE_HARDWARE, ATTR_SIZE, PERF_COUNT_HW_INSTRUCTIONS)
    struct.pack_into("=Q", buffer, 40, EXCLUDE_KERNEL | EXCLUDE_HV)  # enabled at once, user space only
    return buffer


def _paranoid() -> str:
    try:
        with open(PARANOID) as handle:
            return handle.read().strip()
    except OSError:
        return "unknown"


def _reason(code: int) -> str:
    if code in (errno.EACCES, errno.EPERM):
        return (
            f"perf_event_open was refused ({errno.errorcode[code]}): kernel.perf_event_paranoid is {_paranoid()} "
            f"here, or a container's security profile blocks it"
        )
    if code in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV):
        return (
            f"this CPU exposes no instructions-retired counter ({errno.errorcode[code]}; virtual machines "
            f"often hide the hardware counters)"
        )
    if code == errno.ENOSYS:
        return "this kernel has no perf_event_open (ENOSYS)"
    return f"perf_event_open failed: {os.strerror(code)}"


def open_counter() -> int:
    """A file descriptor counting the calling thread's user-space instructions; read it with ``read_counter``.
    CounterUnavailable when it cannot be opened."""
    number = SYSCALL_NUMBERS.get(platform.machine())
    if os.name != "posix" or platform.system() != "Linux" or number is None:
        raise CounterUnavailable(f"hardware counters are read through Linux's perf_event_open (x86-64, arm64); "
                                 f"this is {platform.system()} on {platform.machine()}")  # fmt: skip
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attributes = _attributes()
    descriptor = libc.syscall(
        ctypes.c_long(number),
        attributes,
        ctypes.c_int(0),  # this thread
        ctypes.c_int(-1),  # on any CPU
        ctypes.c_int(-1),  # no group
        ctypes.c_ulong(PERF_FLAG_FD_CLOEXEC),
    )
    if descriptor < 0:
        raise CounterUnavailable(_reason(ctypes.get_errno()))
    return int(descriptor)


def read_counter(descriptor: int) -> int:
    return struct.unpack("=Q", os.read(descriptor, 8))[0]


@cache
def unavailable() -> str | None:
    """Why ``--clock instructions`` cannot run here, or None when it can (checked once per process: the counter
    must open and count)."""
    try:
        descriptor = open_counter()
    except CounterUnavailable as error:
        return str(error)
    try:
        before = read_counter(descriptor)
        sum(range(20_000))
        counted = read_counter(descriptor) - before
    except OSError as error:
        return f"the instructions counter opened but cannot be read: {error.strerror or error}"
    finally:
        os.close(descriptor)
    if counted <= 0:
        return "the instructions counter opened but counts nothing here (a virtual machine without a PMU?)"
    return None
