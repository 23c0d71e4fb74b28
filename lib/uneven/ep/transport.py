"""How an EP dispatch reaches remote experts: one copy per expert, or one copy per remote host.

Decode-time expert parallelism on scale-out hosts, with replicas (a :class:`Placement`). The unit
here is always the *slot* (vocabulary: :mod:`uneven.ep`): every chosen expert slot is served by
its own copy, as DeepEP's low-latency kernels send (one receive buffer per local expert). Two
paths move a token to its ``k`` expert slots:

``"direct"``: one message per (token, expert slot). Slots on another host get an RDMA write
each, through the NIC of the receiving GPU; slots on the token's own host an NVLink copy; a slot
on the token's own GPU costs nothing. Two experts of one token on one GPU get two copies.

``"relay"``: for every remote host that holds one of the token's slots, **one** RDMA write, to
the GPU with the sender's local index on that host (the *relay*); the relay copies the token over
NVLink to each of that host's slots (itself excepted). Slots on the token's own host are reached
over NVLink as in direct mode. *Balancing and Beyond* relays through the same-index GPU, one copy
per remote host, so the traffic stays on its rail [chapter]; that the relay shares its NIC's rail
and leaf switch with the sender, and that in combine it first adds up the weighted outputs of its
host's experts for the token (they reach it over NVLink) and sends **one** copy back, is this
model's reading *(model)*. The relay's own work (a forwarding kernel's time per copy, the wait
between an RDMA arrival and the NVLink fan-out) costs nothing unless
:func:`uneven.ep.decode.decode_layer` is given ``relay_copy`` or ``relay_sync`` *(model)*.

:func:`decode_traffic` counts copies — not bytes, so one count serves FP8 dispatch and BF16
combine — per *NIC stream slot*: NIC ``n``'s RDMA copies are grouped by the host slot they serve,
in the host's **send order** (replica rank first, then GPU: the first expert of every GPU, then
the second ...), the order in which senders that overlap per expert push their data. A relay copy
serves several slots; in dispatch it is counted at the first of them in send order (it must land
before any is served), in combine at the last (the relay returns the sum once all have finished).

With tokens routed independently and uniformly, a token's ``k`` experts touch on average
``(H − 1)(1 − (1 − 1/H)^k)`` remote hosts out of ``H`` (:func:`expected_remote_hosts`), against
``k (H − 1)/H`` remote experts: for ``k = 8``, ``H = 4``, 2.70 against 6.0 copies [derived].

:class:`Transport` holds what a "better transport" changes: the fixed cost of a kernel, the cost
of each RDMA message (serialised per NIC) and the share of SMs that communication takes from the
expert GEMMs while the two run side by side.

Units: seconds, bytes, bytes/s; counts are copies.

>>> round(expected_remote_hosts(8, 4), 2), round(expected_remote_hosts(8, 4, n_experts=256), 2)
(2.7, 2.71)

Two hosts of 4 GPUs (two per NIC), one expert per GPU; token 0 on GPU 0, token 1 on GPU 5:

>>> from uneven.ep.placement import contiguous_slots
>>> p = contiguous_slots(8, 8, gpus_per_node=4, gpus_per_nic=2)
>>> send_order(p).tolist()
[0, 1, 2, 3, 0, 1, 2, 3]
>>> t = decode_traffic(p, [[4, 5, 7], [0, 2, 6]], [0, 5], "relay")
>>> t.nic_in().tolist(), t.nic_out().tolist(), t.rdma_copies
([1, 0, 1, 0], [1, 0, 1, 0], 2)
>>> Transport("mine", fixed=20e-6, per_message=5e-9, sm_tax=0.1)
Transport(name='mine', fixed=20 µs, per_message=5 ns, sm_tax=0.1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._fields import Checked, array, check_fields, choice, real, text
from .._jit import njit
from .._validate import (
    as_int_array,
    check_choice,
    check_instance,
    check_int,
    trusted,
)
from ..limits import check_bytes, check_steps
from ..units import us
from ._kernels import _copy_path, _reference_copy_path
from .placement import MAX_EXPERTS, Placement

__all__ = [
    "Transport",
    "SM_RESIDENT",
    "SM_FREE",
    "TRANSPORT_MODES",
    "DecodeTraffic",
    "decode_traffic",
    "send_order",
    "expected_remote_hosts",
]

TRANSPORT_MODES = ("direct", "relay")
#: Largest step accepted: tokens × k (copies) per call.
MAX_COPIES = 50_000_000


@dataclass(frozen=True)
class Transport(Checked):
    """The costs of an EP communication library, besides bytes.

    ``fixed`` (s): once per dispatch and once per combine kernel (launch, synchronisation).
    ``per_message`` (s): per RDMA message, paid one after another on each NIC (posting work
    requests, doorbells, completions). ``sm_tax`` (0 … <1): share of the GPU's SMs that the
    communication kernels hold; expert GEMMs that run beside them take ``1 / (1 − sm_tax)`` as
    long (without per-expert overlap communication and compute do not run together, so no tax).
    ``fixed`` and ``per_message`` are at most 1000 s, ``sm_tax`` at most 0.95.
    """

    name: str = text(max_len=200)
    fixed: float = real(lo=0.0, hi=1e3, unit="s")
    per_message: float = real(lo=0.0, hi=1e3, unit="s")
    sm_tax: float = real(lo=0.0, hi=0.95)


#: A transport whose receive kernel stays resident on the GPU beside the expert GEMMs, as the
#: model's per-expert overlap needs (model). Its latency is shaped like DeepEP's low-latency (LL)
#: kernels: ``fixed`` and ``per_message`` are model values fitted so that this model, on H800
#: hosts with uniform top-8 routing of 128 tokens per GPU, comes within 6% of DeepEP's published
#: low-latency times (EP8 / EP32 / EP256 dispatch 77 / 155 / 194 µs, combine 114 / 273 / 360 µs,
#: H800 + CX7; github.com/deepseek-ai/DeepEP, README since de8cfca, docs/legacy.md since b306af0
#: [repo]). ``sm_tax`` is a model value and is *not* DeepEP's: DeepEP's README says its LL
#: hook-based overlap occupies no SMs, because it overlaps a whole layer's receive with other
#: work; releasing each expert as soon as its tokens land needs a kernel that keeps polling.
SM_RESIDENT = Transport("SM-resident", fixed=us(30.0), per_message=us(0.01), sm_tax=0.2)
#: SM-free GPU-initiated RDMA (IBGDA-style posting, no SM spinning): lower fixed and per-message
#: costs and no SM tax; the values are the model's, not the paper's.
SM_FREE = Transport("SM-free", fixed=us(10.0), per_message=us(0.003), sm_tax=0.0)


@dataclass(frozen=True, eq=False)
class DecodeTraffic(Checked):
    """Copies of one decode step's dispatch (and, reversed, combine) on a placement.

    Per NIC stream slot (``[n_nics, slots_per_host]``, column ``j`` = the host's ``j``-th slot in
    send order, :func:`send_order`): ``rdma_in`` RDMA copies that arrive through NIC ``n`` in
    dispatch and are first needed by that slot; ``rdma_back`` combine copies that leave through
    NIC ``n`` once that slot has finished. Per slot (``[n_slots]``): ``nvl_in`` NVLink copies into
    its GPU for it (dispatch); ``nvl_back`` NVLink copies out of its GPU (combine: to a relay or to
    a source on the same host); ``tokens`` (token copies the expert computes on);
    ``remote_tokens`` (those of them from other hosts). Per NIC
    (``[n_nics]``): ``rdma_sent`` RDMA copies sent in dispatch and ``rdma_returned`` received in
    combine. ``ret_src``/``ret_op``: for each combine item a source GPU waits for, the GPU and the
    operation that delivers it (``kind`` ``ret_kind`` 0 = RDMA op ``n * slots_per_host + j``,
    1 = the slot's NVLink op, 2 = the slot's own compute: the source holds the expert).
    ``remote_hosts``: int64 ``[T]`` remote hosts per token; ``remote_slots``: remote slots per
    token. Every count is at most :data:`MAX_COPIES`; arrays are read-only.
    """

    mode: str = choice(TRANSPORT_MODES)
    rdma_in: np.ndarray = array("int", shape=("nics", "sph"), nonempty=True, lo=0,
                                hi=MAX_COPIES, repr=False)
    rdma_back: np.ndarray = array("int", shape=("nics", "sph"), lo=0, hi=MAX_COPIES, repr=False)
    nvl_in: np.ndarray = array("int", shape=("slots",), nonempty=True, lo=0, hi=MAX_COPIES,
                               repr=False)
    nvl_back: np.ndarray = array("int", shape=("slots",), lo=0, hi=MAX_COPIES, repr=False)
    tokens: np.ndarray = array("int", shape=("slots",), lo=0, hi=MAX_COPIES, repr=False)
    remote_tokens: np.ndarray = array("int", shape=("slots",), lo=0, hi=MAX_COPIES, repr=False)
    rdma_sent: np.ndarray = array("int", shape=("nics",), lo=0, hi=MAX_COPIES, repr=False)
    rdma_returned: np.ndarray = array("int", shape=("nics",), lo=0, hi=MAX_COPIES, repr=False)
    ret_src: np.ndarray = array("int", shape=("items",), lo=0, hi=MAX_COPIES, repr=False)
    ret_op: np.ndarray = array("int", shape=("items",), lo=0, hi=MAX_COPIES, repr=False)
    ret_kind: np.ndarray = array("int", shape=("items",), lo=0, hi=2, repr=False)
    remote_hosts: np.ndarray = array("int", shape=("T",), lo=0, hi=MAX_COPIES, repr=False)
    remote_slots: np.ndarray = array("int", shape=("T",), lo=0, hi=MAX_COPIES, repr=False)

    @property
    def rdma_copies(self) -> int:
        """RDMA copies in dispatch (= in combine)."""
        return int(self.rdma_sent.sum())

    def __post_init__(self):
        check_fields(self)
        if self.nvl_in.size % self.rdma_in.shape[1]:
            raise ValueError(f"nvl_in must have one entry per slot, a multiple of the slots per "
                             f"host ({self.rdma_in.shape[1]}); got {self.nvl_in.size}")
        top = np.where(self.ret_kind == 0, self.rdma_in.size, self.nvl_in.size)
        if (self.ret_op >= top).any():
            raise ValueError(f"ret_op must name an RDMA stream slot (< {self.rdma_in.size}) for "
                             f"ret_kind 0 and a slot (< {self.nvl_in.size}) otherwise")

    def nic_in(self) -> np.ndarray:
        """RDMA copies received per NIC in dispatch (int64 ``[n_nics]``)."""
        return self.rdma_in.sum(axis=1)

    def nic_out(self) -> np.ndarray:
        """RDMA copies sent per NIC in combine (int64 ``[n_nics]``)."""
        return self.rdma_back.sum(axis=1)


def send_order(placement: Placement) -> np.ndarray:
    """Position of every slot in its host's send order (int64 ``[n_slots]``): replica rank on its
    GPU first, then the GPU's index in the host, i.e. ``rank * gpus_per_node + local_gpu``.

    >>> from uneven.ep.placement import contiguous_slots
    >>> send_order(contiguous_slots(8, 4, gpus_per_node=2, gpus_per_nic=1)).tolist()
    [0, 2, 1, 3, 0, 2, 1, 3]
    """
    check_instance("placement", placement, Placement)
    s = np.arange(placement.n_slots, dtype=np.int64)
    spg, gpn = placement.slots_per_gpu, placement.gpus_per_node
    local = s % (spg * gpn)
    return (local % spg) * gpn + local // spg


# --------------------------------------------------------------------------------------------
# kernel


@njit
def _traffic_kernel(slots, src, spg, gpn, gpnic, order, relay, gpu_node, node_first_gpu,
                    gpu_local, rdma_in, rdma_back, nvl_in, nvl_back, tokens, rtok, sent,
                    returned, ret_src, ret_op, ret_kind, rhosts, rslots, host_stamp, host_first,
                    host_last):
    """Fill the count arrays, one copy per slot by the copy rule of :mod:`uneven.ep._kernels`
    (:func:`_copy_path`); returns the number of combine items written."""
    n_tokens, k = slots.shape
    sph = spg * gpn
    n_items = 0
    for t in range(n_tokens):
        s = src[t]
        hs = s // gpn
        ls = s - hs * gpn
        ns = s // gpnic
        n_rh = 0
        n_rs = 0
        for j in range(k):
            q = slots[t, j]
            d = q // spg
            hd = d // gpn
            tokens[q] += 1
            net, on_net, _, on_nvl = _copy_path(s, hs, ls, d, relay, gpu_node, node_first_gpu)
            if on_nvl:
                nvl_in[q] += 1
                nvl_back[q] += 1
            if not on_net:  # own host: NVLink (kind 1), or nothing for the own GPU (kind 2)
                ret_src[n_items] = s
                ret_op[n_items] = q
                ret_kind[n_items] = 1 if on_nvl else 2
                n_items += 1
                continue
            n_rs += 1
            rtok[q] += 1
            o = order[q]
            if not relay:  # an RDMA write of its own, through the NIC of the slot's GPU
                nd = net // gpnic
                rdma_in[nd, o] += 1
                rdma_back[nd, o] += 1
                sent[ns] += 1
                returned[ns] += 1
                ret_src[n_items] = s
                ret_op[n_items] = nd * sph + o
                ret_kind[n_items] = 0
                n_items += 1
                continue
            # relay: remember the first and last slot (in send order) per remote host
            if host_stamp[hd] != t:
                host_stamp[hd] = t
                host_first[hd] = o
                host_last[hd] = o
                n_rh += 1
            else:
                host_first[hd] = min(host_first[hd], o)
                host_last[hd] = max(host_last[hd], o)
        if relay:
            for j in range(k):  # one RDMA write per distinct remote host, to its relay's NIC
                q = slots[t, j]
                d = q // spg
                hd = d // gpn
                if hd == hs or host_stamp[hd] != t:
                    continue
                host_stamp[hd] = -1 - t  # visited: count each host once
                net, _, _, _ = _copy_path(s, hs, ls, d, relay, gpu_node, node_first_gpu)
                nr = net // gpnic
                rdma_in[nr, host_first[hd]] += 1
                rdma_back[nr, host_last[hd]] += 1
                sent[ns] += 1
                returned[ns] += 1
                ret_src[n_items] = s
                ret_op[n_items] = nr * sph + host_last[hd]
                ret_kind[n_items] = 0
                n_items += 1
        rhosts[t] = n_rh if relay else 0
        rslots[t] = n_rs
        if not relay:  # distinct remote hosts still reported in direct mode
            for j in range(k):
                hd = slots[t, j] // spg // gpn
                if hd != hs and host_stamp[hd] != t:
                    host_stamp[hd] = t
                    rhosts[t] += 1
    return n_items


def _reference_traffic(slots, src, spg, gpn, gpnic, n_gpus, relay):
    """Counts with dicts and sets (tests only): (rdma_in, rdma_back, nvl_in, nvl_back, tokens,
    sent, returned, items as a sorted list of (src, kind, op))."""
    n_slots = n_gpus * spg
    sph = spg * gpn
    n_nics = n_gpus // gpnic
    order = [(q % sph % spg) * gpn + (q % sph) // spg for q in range(n_slots)]
    rdma_in = np.zeros((n_nics, sph), dtype=np.int64)
    rdma_back = np.zeros((n_nics, sph), dtype=np.int64)
    nvl_in = np.zeros(n_slots, dtype=np.int64)
    nvl_back = np.zeros(n_slots, dtype=np.int64)
    tokens = np.zeros(n_slots, dtype=np.int64)
    sent = np.zeros(n_nics, dtype=np.int64)
    returned = np.zeros(n_nics, dtype=np.int64)
    items = []
    for t in range(len(src)):
        s = int(src[t])
        by_relay = {}
        for q in (int(x) for x in slots[t]):
            tokens[q] += 1
            net, nvl = _reference_copy_path(s, q // spg, gpn, relay)
            if nvl >= 0:
                nvl_in[q] += 1
                nvl_back[q] += 1
            if net < 0:
                items.append((s, 1 if nvl >= 0 else 2, q))
            elif not relay:
                rdma_in[net // gpnic, order[q]] += 1
                rdma_back[net // gpnic, order[q]] += 1
                sent[s // gpnic] += 1
                returned[s // gpnic] += 1
                items.append((s, 0, (net // gpnic) * sph + order[q]))
            else:
                by_relay.setdefault(net, []).append(q)
        for rho, qs in by_relay.items():
            nr = rho // gpnic
            first = min(order[q] for q in qs)
            last = max(order[q] for q in qs)
            rdma_in[nr, first] += 1
            rdma_back[nr, last] += 1
            sent[s // gpnic] += 1
            returned[s // gpnic] += 1
            items.append((s, 0, nr * sph + last))
    return rdma_in, rdma_back, nvl_in, nvl_back, tokens, sent, returned, sorted(items)


# --------------------------------------------------------------------------------------------
# public API



def decode_traffic(placement: Placement, slots, src_gpu, mode: str = "direct") -> DecodeTraffic:
    """Count the copies of one decode step's dispatch and combine (see the module docstring).

    ``slots`` int ``[T, k]``: the slot serving each of a token's ``k`` choices (from
    :func:`uneven.ep.placement.route_to_slots`; the ``k`` slots of a token must be
    distinct experts); ``src_gpu`` int ``[T]``; ``mode`` ``"direct"`` or ``"relay"``. At most
    50 million copies (``T × k``).

    >>> from uneven.ep.placement import contiguous_slots
    >>> p = contiguous_slots(8, 8, gpus_per_node=4, gpus_per_nic=2)   # 2 hosts x 4 GPUs
    >>> d = decode_traffic(p, [[4, 5, 7]], [0], "direct")
    >>> r = decode_traffic(p, [[4, 5, 7]], [0], "relay")
    >>> d.rdma_copies, r.rdma_copies, int(r.nvl_in.sum())   # relay: one copy, two forwards
    (3, 1, 2)
    """
    p = check_instance("placement", placement, Placement)
    mode = check_choice("mode", mode, TRANSPORT_MODES)
    q = as_int_array("slots", slots, ndim=2, lo=0, hi=p.n_slots - 1)
    if q.size > MAX_COPIES:
        raise ValueError(f"slots must hold at most {MAX_COPIES:,} copies; got {q.size:,}")
    check_bytes("slots", slots, 8.0 * (3 * q.size + 2 * q.shape[0] + 8 * p.n_slots),
                "the counts and the combine items of every copy")
    check_steps("slots", slots, 4.0 * q.size + 8.0 * p.n_slots, "counting every copy")
    src = as_int_array("src_gpu", src_gpu, shape=(q.shape[0],), lo=0, hi=p.n_gpus - 1)
    n_tok, k = q.shape
    spg, gpn, gpnic = p.slots_per_gpu, p.gpus_per_node, p.gpus_per_nic
    sph = spg * gpn
    n_nics = p.n_nics
    arrays = dict(
        rdma_in=np.zeros((n_nics, sph), dtype=np.int64),
        rdma_back=np.zeros((n_nics, sph), dtype=np.int64),
        nvl_in=np.zeros(p.n_slots, dtype=np.int64),
        nvl_back=np.zeros(p.n_slots, dtype=np.int64),
        tokens=np.zeros(p.n_slots, dtype=np.int64),
        remote_tokens=np.zeros(p.n_slots, dtype=np.int64),
        rdma_sent=np.zeros(n_nics, dtype=np.int64),
        rdma_returned=np.zeros(n_nics, dtype=np.int64),
    )
    ret_src = np.empty(n_tok * k, dtype=np.int64)
    ret_op = np.empty(n_tok * k, dtype=np.int64)
    ret_kind = np.empty(n_tok * k, dtype=np.int64)
    rhosts = np.zeros(n_tok, dtype=np.int64)
    rslots = np.zeros(n_tok, dtype=np.int64)
    gpu_ids = np.arange(p.n_gpus, dtype=np.int64)
    n_items = _traffic_kernel(
        q, src, spg, gpn, gpnic, send_order(p), mode == "relay", gpu_ids // gpn,
        np.arange(0, p.n_gpus, gpn, dtype=np.int64), gpu_ids % gpn, arrays["rdma_in"],
        arrays["rdma_back"], arrays["nvl_in"], arrays["nvl_back"], arrays["tokens"],
        arrays["remote_tokens"], arrays["rdma_sent"], arrays["rdma_returned"], ret_src, ret_op,
        ret_kind, rhosts, rslots,
        np.full(p.n_nodes, -1, dtype=np.int64), np.zeros(p.n_nodes, dtype=np.int64),
        np.zeros(p.n_nodes, dtype=np.int64),
    )
    arrays.update(ret_src=ret_src[:n_items], ret_op=ret_op[:n_items],
                  ret_kind=ret_kind[:n_items], remote_hosts=rhosts, remote_slots=rslots)
    for a in arrays.values():
        a.flags.writeable = False
    return trusted(DecodeTraffic, mode=mode, **arrays)


def expected_remote_hosts(k: int, n_hosts: int, *, n_experts: int | None = None) -> float:
    """Expected number of *other* hosts a token's ``k`` experts touch, experts uniform over hosts.

    Without ``n_experts``, each expert's host is drawn independently:
    ``(H − 1)(1 − (1 − 1/H)^k)``. With ``n_experts`` (``k`` distinct experts out of
    ``n_experts``, ``n_experts / H`` per host, at most 65,536 experts):
    ``(H − 1)(1 − C(E − E/H, k) / C(E, k))``.

    >>> round(expected_remote_hosts(8, 4), 3), round(8 * 3 / 4, 1)
    (2.7, 6.0)
    """
    k = check_int("k", k, lo=1)
    h = check_int("n_hosts", n_hosts, lo=1)
    if n_experts is None:
        return (h - 1) * (1.0 - (1.0 - 1.0 / h) ** k)
    e = check_int("n_experts", n_experts, lo=1, hi=MAX_EXPERTS)
    if k > e:
        raise ValueError(f"k must be at most n_experts ({e}); got {k}")
    if e % h:
        raise ValueError(f"n_hosts must divide n_experts ({e}); got {h}")
    return (h - 1) * (1.0 - math.comb(e - e // h, k) / math.comb(e, k))
