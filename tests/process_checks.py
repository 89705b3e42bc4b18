"""What the fault tests look at in /proc: the live members of a process group."""

import os


def group_members(group: int) -> list[int]:
    """Live processes (zombies aside) of process group ``group``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                found.append(int(entry))
    return found
