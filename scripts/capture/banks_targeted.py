"""Targeted confirmation patterns for the 64/128-bit shared-load rule in tcemu/layout/banks.py.

tcemu/layout/banks.py already fits all 7,560 recorded launches; these ~1,000 launches stress the edges
of the rule where the random patterns are thin, and each one separates tcemu/layout/banks.py from a
named alternative (see ALTS). Same record layout as capture_banks.py:
row = [op, mask (int32, signed), 32 byte offsets], offsets width-aligned, inside 32 KiB.

    recs, tags = targeted(np.random.default_rng(0))   # recs: (n, 34) int64
"""
import numpy as np

REGION = 32 * 1024
LOAD_OPS = {3: 8, 4: 8, 5: 16, 6: 16}     # ld.shared.b64, v2.b32, v4.b32, v2.b64
STORE_OPS = {10: 8, 11: 8, 12: 16, 13: 16}
FULL = 0xFFFFFFFF


def _rec(op, mask, addr):
    mask &= 0xFFFFFFFF
    addr = np.asarray(addr, np.int64) % REGION
    return np.concatenate([[op, mask - 2**32 if mask >= 2**31 else mask], addr]).astype(np.int64)


def _redundant(rng, w, x, conflict_free=True):
    """32 addresses with addr[t] == addr[t ^ x]; conflict-free within every merged group when asked."""
    t = np.arange(32)
    rep = np.minimum(t, t ^ x)                    # representative lane of each pair
    reps = np.unique(rep)
    if conflict_free:                              # distinct bank groups inside each merged group
        per_row = 128 // w
        slots = rng.permutation(per_row)
        row = int(rng.integers(0, 200))
        a = np.zeros(32, np.int64)
        for k, r in enumerate(reps):
            grp = r // 16 if w == 16 else 0        # merged group: half-warp (16 B) or warp (8 B)
            j = (np.searchsorted(reps[reps // 16 == grp] if w == 16 else reps, r))
            a[t[rep == r]] = (row + grp) * 128 + int(slots[j % per_row]) * w + (j // per_row) * 128 * 3
    else:
        u = w * rng.integers(0, REGION // w, reps.size)
        a = u[np.searchsorted(reps, rep)]
    return a


def targeted(rng):
    recs, tags = [], []
    def add(tag, op, mask, addr):
        recs.append(_rec(op, mask, addr)); tags.append(tag)

    for op, w in LOAD_OPS.items():
        for rep in range(6):
            for x in (1, 2, 3, 4, 8, 16):
                # A: full pair-redundant warps for each lane-xor x (rule: merge only for x = 1, 2)
                add(f"A_x{x}", op, FULL, _redundant(rng, w, x))
                add(f"A_x{x}_conflicty", op, FULL, _redundant(rng, w, x, conflict_free=False))
            for x in (1, 2):
                base = _redundant(rng, w, x)
                # B: one lane broken (moved to a fresh address in an unused bank of row 250);
                #    position sweeps all four quarters -> rule: merge lost everywhere
                for q in range(4):
                    a = base.copy(); lane = 8 * q + int(rng.integers(0, 8))
                    a[lane] = 250 * 128 + (int(base[lane]) % 128)
                    add(f"B_x{x}_break_q{q}", op, FULL, a)
                    # B': same, but the broken lane's partner is masked off -> rule: merge kept
                    add(f"B_x{x}_break_q{q}_partner_off", op, FULL & ~(1 << (lane ^ x)), a)
            # C: half 0 redundant under x=1 only, half 1 under x=2 only (per-half vs warp-wide check)
            a1, a2 = _redundant(rng, w, 1), _redundant(rng, w, 2)
            a = np.concatenate([a1[:16], a2[16:]])
            add("C_x1_half0_x2_half1", op, FULL, a)
            add("C_x1_half0_x2_half1_half1_off", op, 0x0000FFFF, a)
            # D: redundancy only through inactive lanes: exactly one lane of each (t, t^x) pair active
            for x in (1, 2, 4):
                t = np.arange(32)
                pick = rng.integers(0, 2, 32).astype(bool)
                keep = [tt for tt in range(32) if (tt & x) == 0]
                m = 0
                for tt in keep:
                    m |= 1 << (tt ^ x if pick[tt] else tt)
                add(f"D_onehot_x{x}", op, m, w * rng.permutation(REGION // w)[:32])
            # E: two active lanes, same half (16 B) or across halves (8 B), all lane pairs xor 1..31
            #    (non-conflicting banks, different rows) -> rule: 1 wavefront iff (8 B) or same half (16 B)
            la, lb = sorted(rng.choice(32, 2, replace=False))
            a = np.full(32, 0, np.int64)
            a[la], a[lb] = 128 * 10, 128 * 11 + 64
            add("E_two_lanes", op, (1 << int(la)) | (1 << int(lb)), a)
            # F: merged group with heavy same-bank conflicts (k distinct rows, one bank)
            for k in (2, 4, 8):
                x = int(rng.choice([1, 2]))
                t = np.arange(32)
                rows = rng.choice(200, k, replace=False)
                a = (rows[(t & ~x) % k] * 128 + 0).astype(np.int64)
                add(f"F_x{x}_samebank_k{k}", op, FULL, a)
    # G: controls - the same pair-redundant patterns as stores (rule: never merged)
    for op, w in STORE_OPS.items():
        for rep in range(8):
            for x in (1, 2):
                add(f"G_store_x{x}", op, FULL, _redundant(rng, w, x))
    return np.array(recs, np.int64), tags

