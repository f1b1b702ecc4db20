"""condcheck/mapped_object.py: an object written once and read memory-mapped, its arrays views of the file."""
import pickle

import numpy as np
import scipy.sparse as sp

from condcheck.mapped_object import ALIGN, MappedObject, forget_loaded, write_mapped


def _reloaded(obj, tmp_path):
    """The object as another process gets it: the handle pickled and loaded anew."""
    handle = pickle.loads(pickle.dumps(write_mapped(obj, str(tmp_path))))
    forget_loaded()
    return handle.load()


def test_arrays_come_back_equal_bit_for_bit(tmp_path):
    a = np.array([0.0, -0.0, 1.5, np.inf, 2.0 ** -1074])
    back = _reloaded({"a": a, "i": np.arange(7, dtype=np.int32), "s": "text"}, tmp_path)
    assert back["a"].tobytes() == a.tobytes() and back["i"].tolist() == list(range(7)) and back["s"] == "text"


def test_a_sparse_matrix_comes_back_with_the_same_entries(tmp_path):
    m = sp.random(50, 40, density=0.1, format="csr", random_state=1)
    back = _reloaded(m, tmp_path)
    assert (back != m).nnz == 0 and back.indices.dtype == m.indices.dtype


def test_arrays_read_back_are_read_only_views_of_the_file(tmp_path):
    back = _reloaded(np.ones(1000), tmp_path)
    assert not back.flags.writeable and not back.flags.owndata


def test_every_array_starts_at_an_aligned_address(tmp_path):
    parts = [np.ones(n, np.int8) for n in (1, 3, 5)] + [np.ones(3)]
    for arr in _reloaded(parts, tmp_path):
        assert arr.ctypes.data % ALIGN == 0


def test_the_handle_stays_small_however_large_the_arrays(tmp_path):
    handle = write_mapped([np.zeros(1 << 20), np.zeros(1 << 18)], str(tmp_path))
    assert handle.nbytes == 8 * ((1 << 20) + (1 << 18)) and len(pickle.dumps(handle)) < 2000


def test_a_process_keeps_the_object_it_loaded_last_and_reloads_an_earlier_one(tmp_path):
    first, second = write_mapped([np.ones(4)], str(tmp_path)), write_mapped([np.zeros(4)], str(tmp_path))
    kept = first.load()
    assert first.load() is kept
    assert second.load()[0].tolist() == [0.0] * 4
    again = first.load()
    assert again is not kept and again[0].tolist() == [1.0] * 4


def test_an_object_without_arrays_is_written_as_an_empty_file(tmp_path):
    handle = write_mapped({"k": [1, 2]}, str(tmp_path))
    forget_loaded()
    assert isinstance(handle, MappedObject) and handle.nbytes == 0 and handle.load() == {"k": [1, 2]}
