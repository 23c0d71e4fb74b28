"""SimGrid side of ``bench_fluid.py``: the same flows, simulated by SimGrid's max-min solver.

Runs under the *system* Python with Debian's ``python3-simgrid`` (SimGrid 3.32), in a subprocess
of the benchmark (``/usr/bin/python3 benchmarks/simgrid_fluid.py IN.json OUT.json``); it needs
nothing else (no numpy). The input file holds the links (capacities, bytes/s), the route of each
(src, dst) host pair (link ids) and the flows (src, dst, integer bytes, arrival s).

Model settings, so that SimGrid computes plain max-min fair sharing, as the fluid engine does:
``network/model:CM02`` with no correction factors (latency and bandwidth factors 1, weight-S 0),
no TCP window bound (``network/TCP-gamma:0``), no reverse (ACK) traffic
(``network/crosstraffic:0``), zero link latency, and tight precisions (``surf/precision`` and
``maxmin/precision``, 1e-9 and 1e-5 by default, here 1e-13) so that completion times can be
compared to 1e-9. One actor starts each flow at its arrival (``this_actor.sleep_until``, then
``Comm.sendto_async``; no actor per flow), waits for all of them with ``Comm.wait_all``, and reads
each completion time from ``Comm.finish_time``: the Python side costs one call per flow, never
one per event. Sizes are whole bytes (``int``): give the fluid engine the same.

Output: ``finish`` (s, per flow, in input order) and ``seconds`` (wall time of
``Engine.run()``, the simulation itself: platform building is excluded).
"""

from __future__ import annotations

import json
import math
import sys
import time


def main(argv):
    import simgrid

    src_path, out_path = argv[1], argv[2]
    with open(src_path) as fh:
        spec = json.load(fh)
    e = simgrid.Engine([
        "simgrid_fluid",
        "--cfg=network/model:CM02",
        "--cfg=network/latency-factor:1",
        "--cfg=network/bandwidth-factor:1",
        "--cfg=network/weight-S:0",
        "--cfg=network/TCP-gamma:0",
        "--cfg=network/crosstraffic:0",
        "--cfg=surf/precision:1e-13",
        "--cfg=maxmin/precision:1e-13",
        "--log=root.thres:critical",
    ])
    zone = simgrid.NetZone.create_full_zone("fabric")
    hosts = [zone.create_host(f"h{i}", 1e9) for i in range(spec["n_hosts"])]
    links = []
    for i, cap in enumerate(spec["capacity"]):
        link = zone.create_link(f"l{i}", float(cap))
        link.set_latency(0.0)
        link.set_sharing_policy(simgrid.Link.SharingPolicy.SHARED, None)
        links.append(link.seal())
    for (s, d), path in zip(spec["pairs"], spec["routes"], strict=True):
        zone.add_route(hosts[s].netpoint, hosts[d].netpoint, None, None,
                       [simgrid.LinkInRoute(links[x]) for x in path], False)
    zone.seal()

    flows = spec["flows"]  # [src, dst, bytes, arrival]
    order = sorted(range(len(flows)), key=lambda f: (flows[f][3], f))
    finish = [math.nan] * len(flows)

    def controller():
        # Start every flow at its arrival, then wait for them all; SimGrid records each
        # completion time itself (Comm.finish_time), so Python runs once per flow, not per event.
        comms = [None] * len(flows)
        for f in order:
            s, d, size, at = flows[f]
            if at > simgrid.Engine.clock:
                simgrid.this_actor.sleep_until(at)
            comms[f] = simgrid.Comm.sendto_async(hosts[s], hosts[d], int(size))
        simgrid.Comm.wait_all(comms)
        for f, c in enumerate(comms):
            finish[f] = c.finish_time

    simgrid.Actor.create("controller", hosts[0], controller)
    t0 = time.perf_counter()
    e.run()
    seconds = time.perf_counter() - t0
    with open(out_path, "w") as fh:
        json.dump({"finish": finish, "seconds": seconds,
                   "version": str(simgrid.simgrid_version)}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
