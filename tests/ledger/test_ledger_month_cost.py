"""What a ledger month reads and computes, made cheaper without changing a result (issue 14, month 12 within
1.5x of month 1; benchmarks/bench_ledger.py measures it):

* m-invariance's split of every balanced bucket at once (:func:`publishers.m_invariance.invariance.balanced_split_many`)
  returns, bucket by bucket, the leaves of :func:`publishers.m_invariance.invariance.balanced_split` (Li & Zhou eq. 4:
  the same cut attribute, score, tie-break and order), on random buckets with ties and counterfeit slots;
* a kept release's membership (:class:`attacks.update_graph.incremental.StoredMembership`) gives the rows and the
  matrix the stored CSR matrix gives;
* BPG's packed text columns (:mod:`publishers.bpg.store`) read back as written, ``None``, empty texts and NUL
  included, and a store of the older one-row-per-record format is refused with one line.
"""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from attacks.incremental import pack_rows
from attacks.update_graph.incremental import StoredMembership
from multirelease.errors import InputError
from publishers.bpg import store as bpg_store
from publishers.m_invariance.invariance import balanced_split, balanced_split_many


@st.composite
def _buckets(draw):
    """Balanced buckets over a small code table: entries of one length per bucket, real rows (each used once)
    and counterfeit placeholders (negative) in any slot; few distinct codes, so ties are common."""
    n_rows = draw(st.integers(1, 60))
    q = draw(st.integers(1, 4))
    top = draw(st.integers(1, 5))
    codes = np.array(draw(st.lists(st.lists(st.integers(0, top), min_size=q, max_size=q), min_size=n_rows,
                                   max_size=n_rows)), dtype=np.int32)
    rows = draw(st.permutations(range(n_rows)))
    fake = -1
    buckets = []
    for _ in range(draw(st.integers(1, 5))):
        n_entries, delta = draw(st.integers(1, 5)), draw(st.integers(0, 8))
        entries = []
        for _ in range(n_entries):
            entry = []
            for _ in range(delta):
                if rows and draw(st.booleans()):
                    entry.append(rows.pop())
                else:
                    entry.append(fake)
                    fake -= 1
            entries.append(entry)
        buckets.append(entries)
    return codes, buckets


@settings(max_examples=150)  # small buckets, a few ms each
@given(_buckets())
def test_balanced_split_many_is_balanced_split_bucket_by_bucket(case):
    codes, buckets = case
    q = codes.shape[1]
    expected = [balanced_split([list(e) for e in b], codes, None, np.ones(q)) for b in buckets]
    assert balanced_split_many([[list(e) for e in b] for b in buckets], codes) == expected


def test_balanced_split_many_on_a_worked_bucket():
    """Two entries of four rows on one attribute: cut at rank 2 of each entry, then at rank 1."""
    codes = np.array([[5], [1], [3], [2], [9], [0], [7], [4]], dtype=np.int32)
    leaves = balanced_split_many([[[0, 1, 2, 3], [4, 5, 6, -1]]], codes)[0]
    # entry 0 sorted by code: 1 (1), 3 (2), 2 (3), 0 (5); entry 1: 5 (0), 6 (7), 4 (9), then the counterfeit
    assert leaves == [[[1], [5]], [[3], [6]], [[2], [4]], [[0], [-1]]]


@settings(max_examples=100)
@given(st.integers(1, 30), st.integers(1, 70000), st.floats(0, 0.3), st.integers(0, 2**31 - 1))
def test_stored_membership_reads_as_the_matrix(n, n_cls, density, seed):
    m = sparse.random(n, n_cls, density=density, format="csr", random_state=seed).astype(bool)
    m.sort_indices()
    stored = StoredMembership(m.shape, m.indptr, pack_rows(m.indptr, m.indices))
    rows = np.unique(np.random.default_rng(seed).integers(0, n, size=n))
    part = stored[rows]
    assert part.shape == (len(rows), n_cls)
    assert np.array_equal(part.indptr, m[rows].indptr) and np.array_equal(part.indices, m[rows].indices)
    assert np.array_equal(stored.indices, m.indices) and (stored.matrix() != m).nnz == 0


@given(st.lists(st.one_of(st.none(), st.text())))
def test_bpg_text_columns_read_back(values):
    assert bpg_store._unpack_texts(bpg_store._pack_texts(values)) == values


def test_a_store_of_the_older_format_is_refused(tmp_path):
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE records (key INTEGER PRIMARY KEY, rid TEXT, version INTEGER NOT NULL)")
    with pytest.raises(InputError, match="older format"):
        bpg_store._read_records(con)
    con.close()
