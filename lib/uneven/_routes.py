"""Route kernels over a topology's integer parameter vector (private).

:mod:`uneven.topology` builds the parameter vector (``Topology.iparams``, laid out by the
``P_*`` indices below); the link-load engine and the superpod model compile these kernels into
theirs, so a route is written once. Routes are computed on the fly from the structure, never
stored per pair: a 16,384-GPU cluster needs no N² table.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit

MAX_ROUTE = 6  # the longest route has 6 links (PXN hop + NIC + leaf up/down + NIC)

# Layout of the integer parameter vector that kernels receive.
P_KIND, P_N, P_G, P_K, P_NPL, P_LPR, P_PXN, P_NODES, P_PLANES = 0, 1, 2, 3, 4, 5, 6, 7, 8
P_OFF0, P_OFF1, P_OFF2, P_OFF3, P_OFF4, P_OFF5, P_NLINKS = 9, 10, 11, 12, 13, 14, 15
N_IPARAMS = 16
KIND_CLUSTER, KIND_SUPERPOD = 0, 1


@njit
def _net_path(ip, node_s, nic_s, node_d, nic_d, out, n):
    """Append NIC up, [leaf up, leaf down], NIC down to ``out`` starting at ``n``."""
    k = ip[P_K]
    npl = ip[P_NPL]
    lpr = ip[P_LPR]
    out[n] = ip[P_OFF2] + node_s * k + nic_s
    n += 1
    leaf_s = nic_s * lpr + node_s // npl
    leaf_d = nic_d * lpr + node_d // npl
    if leaf_s != leaf_d:
        out[n] = ip[P_OFF4] + leaf_s
        out[n + 1] = ip[P_OFF5] + leaf_d
        n += 2
    out[n] = ip[P_OFF3] + node_d * k + nic_d
    return n + 1



@njit
def _route(ip, src, dst, out):
    """Write the link ids from ``src`` to ``dst`` into ``out``; return how many."""
    if src == dst:
        return 0
    g = ip[P_G]
    node_s = src // g
    node_d = dst // g
    if ip[P_KIND] == KIND_SUPERPOD:
        out[0] = ip[P_OFF0] + src
        if node_s == node_d:
            out[1] = ip[P_OFF1] + dst
            return 2
        out[1] = ip[P_OFF2] + node_s
        out[2] = ip[P_OFF3] + node_d
        out[3] = ip[P_OFF1] + dst
        return 4
    if node_s == node_d:
        out[0] = ip[P_OFF0] + src
        out[1] = ip[P_OFF1] + dst
        return 2
    gpn = g // ip[P_K]
    ls = src - node_s * g
    ld = dst - node_d * g
    rs = ls // gpn
    rd = ld // gpn
    if rs == rd:
        return _net_path(ip, node_s, rs, node_d, rd, out, 0)
    if ip[P_PXN] == 1:
        # PXN: hop over NVLink to the GPU on the source node with the destination's local index,
        # which sits on the destination's rail, then cross the network on that rail.
        relay = node_s * g + ld
        out[0] = ip[P_OFF0] + src
        out[1] = ip[P_OFF1] + relay
        return _net_path(ip, node_s, rd, node_d, rd, out, 2)
    # Shared spines: leave on the source's rail, change rail in the spine layer.
    return _net_path(ip, node_s, rs, node_d, rd, out, 0)



@njit
def _paths_csr(ip, src, dst, ptr, links):
    buf = np.empty(MAX_ROUTE, dtype=np.int64)
    n = 0
    for f in range(src.size):
        k = _route(ip, src[f], dst[f], buf)
        for h in range(k):
            links[n + h] = buf[h]
        n += k
        ptr[f + 1] = n
    return n



@njit
def _hop_class(ip, src, dst):
    if src == dst:
        return 0
    g = ip[P_G]
    return 1 if src // g == dst // g else 2

