"""glibc arena heaps of another process, read from the host the way glibc
links them, independent of memtrimd's collectors (the same walk as
tests/integration/heap_walk.cc, for the container tests).

An arena's first heap starts at a 64 MiB boundary inside an anonymous rw-p
mapping, and its heap_info header has prev 0 and ar_ptr = start + 48 (the
arena's malloc_state follows the header). The arena's newest heap is the one
that holds its top chunk (malloc_state.top at offset 96, glibc 2.26+ on
64-bit); its prev links lead down to the first. heap_info on 64-bit:
ar_ptr, prev, size, mprotect_size (the rw-p part glibc made usable), then
pagesize. A heap's resident bytes are the present pages of
[start, start + mprotect_size) in /proc/<pid>/pagemap. Reads
/proc/<pid>/mem: root on the host, as the container tests run.
"""

import struct

HEAP = 64 << 20
PAGE = 4096
ARENA_OFFSET = 48  # sizeof(heap_info) with its padding
TOP_OFFSET = 96  # malloc_state.top


def _words(mem, address, n):
    try:
        mem.seek(address)
        data = mem.read(8 * n)
    except OSError:
        return None
    return struct.unpack(f"<{n}Q", data) if len(data) == 8 * n else None


def _present_pages(pagemap, start, length):
    pagemap.seek(start // PAGE * 8)
    data = pagemap.read(length // PAGE * 8)
    return sum(e >> 63 for e in struct.unpack(f"<{len(data) // 8}Q", data))


def _anonymous_rw(pid):
    for line in open(f"/proc/{pid}/maps"):
        fields = line.split(maxsplit=5)
        path = fields[5].strip() if len(fields) > 5 else ""
        if fields[1] != "rw-p" or fields[4] != "0" or (path and not path.startswith("[anon:")):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        yield start, end


def walk_arena_heaps(pid):
    """The arena heaps of `pid`: a list of (start, mprotect_size, resident
    bytes) in address order. Raises RuntimeError when a chain does not
    lead back to its arena (the process changed during the walk)."""
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem, \
            open(f"/proc/{pid}/pagemap", "rb", buffering=0) as pagemap:
        arenas = []
        for start, end in _anonymous_rw(pid):
            for a in range((start + HEAP - 1) // HEAP * HEAP, end, HEAP):
                if _present_pages(pagemap, a, PAGE) == 0:
                    continue  # never read what nobody wrote
                h = _words(mem, a, 4)
                if h and h[1] == 0 and h[0] == a + ARENA_OFFSET and 0 < h[2] <= h[3] <= HEAP:
                    arenas.append(h[0])
        heaps = {}
        for arena in arenas:
            top = _words(mem, arena + TOP_OFFSET, 1)
            if top is None:
                raise RuntimeError(f"cannot read the top of the arena at {arena:#x}")
            at = top[0] // HEAP * HEAP
            while True:
                h = _words(mem, at, 4)
                if h is None or h[0] != arena or at in heaps:
                    raise RuntimeError(f"the chain of the arena at {arena:#x} leaves it at {at:#x}")
                heaps[at] = (at, h[3], _present_pages(pagemap, at, h[3]) * PAGE)
                if h[1] == 0:
                    if at + ARENA_OFFSET != arena:
                        raise RuntimeError(f"the chain of the arena at {arena:#x} ends at {at:#x}")
                    break
                at = h[1]
    return [heaps[k] for k in sorted(heaps)]
