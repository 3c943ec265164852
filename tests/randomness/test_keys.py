"""Release keys: modes, key files and their checks, fingerprints, binding, typed stream labels,
nothing secret leaks."""

from __future__ import annotations

import base64
import json
import os

import pytest

from spark_dp.errors import ParameterError
from spark_dp.randomness import Randomness, ReleaseKey, UnboundRandomnessError
from spark_dp.randomness.keys import encode_labels, secret_int


def _key_file(path, content: bytes, mode: int = 0o600):
    path.write_bytes(content)
    path.chmod(mode)
    return path


def test_modes():
    assert Randomness.create().mode == "entropy"
    assert Randomness.create(5).mode == "test-seed" and Randomness.create(5).seeded
    assert not Randomness.create().seeded
    with pytest.raises(ParameterError, match="seed must be an integer"):
        Randomness.create("7")  # type: ignore[arg-type]


def test_entropy_keys_are_fresh_and_seed_keys_repeat():
    assert Randomness.create().fingerprint != Randomness.create().fingerprint
    assert Randomness.create(5).fingerprint == Randomness.create(5).fingerprint
    assert Randomness.create(5).fingerprint != Randomness.create(6).fingerprint


def test_key_file(tmp_path):
    path = _key_file(tmp_path / "key", bytes(range(40)))
    a, b = Randomness.from_key_file(str(path)), Randomness.from_key_file(str(path))
    assert a.mode == "key-file" and a.fingerprint == b.fingerprint and not a.seeded
    other = _key_file(tmp_path / "other", bytes(range(1, 41)))
    assert Randomness.from_key_file(str(other)).fingerprint != a.fingerprint
    os.chmod(path, 0o400)  # read-only for its owner: fine
    assert Randomness.from_key_file(str(path)).fingerprint == a.fingerprint


@pytest.mark.parametrize("content", [b"", b"x" * 31, bytes(range(16))])
def test_short_key_files_are_refused(tmp_path, content):
    path = _key_file(tmp_path / "key", content)
    with pytest.raises(ParameterError, match=rf"holds {len(content)} bytes.*at least 32"):
        ReleaseKey.from_file(path)


@pytest.mark.parametrize("mode", [0o644, 0o666, 0o640, 0o604, 0o620, 0o602, 0o700 | 0o010])
def test_key_files_others_may_read_or_write_are_refused(tmp_path, mode):
    path = _key_file(tmp_path / "key", os.urandom(32), mode)
    with pytest.raises(ParameterError, match=rf"mode 0{mode:o}.*owner only.*chmod 600 ") as info:
        ReleaseKey.from_file(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (bytes(32), "one repeated byte"),
        (b"\xff" * 64, "one repeated byte"),
        (b"ab12" * 8, "pattern of 4 bytes"),
        (bytes(range(16)) * 3, "pattern of 16 bytes"),
        (b"secret" * 6, "pattern of 6 bytes"),
    ],
)
def test_constant_and_repeated_key_files_are_refused(tmp_path, content, what):
    path = _key_file(tmp_path / "key", content)
    with pytest.raises(ParameterError, match=rf"holds (a )?{what}.*not random bytes"):
        ReleaseKey.from_file(path)


def test_a_17_byte_period_is_not_taken_for_a_pattern(tmp_path):
    path = _key_file(tmp_path / "key", bytes(range(17)) * 2)  # 34 bytes, period 17 > 16
    assert ReleaseKey.from_file(path).mode == "key-file"


def test_a_key_file_that_is_not_a_regular_file_is_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)  # reading it would block
    with pytest.raises(ParameterError, match="is not a regular file"):
        ReleaseKey.from_file(fifo)
    with pytest.raises(ParameterError, match="is not a regular file"):
        ReleaseKey.from_file(tmp_path)


def test_a_missing_key_file_is_refused(tmp_path):
    with pytest.raises(ParameterError, match=r"--noise-key-file .* cannot be read"):
        ReleaseKey.from_file(tmp_path / "nope")


def test_the_key_never_shows(tmp_path):
    raw = bytes(range(100, 140))
    path = _key_file(tmp_path / "key", raw)
    r = Randomness.from_key_file(str(path))
    secret = r.key.secret
    bound = r.bind("release")
    text = repr(r) + repr(r.key) + json.dumps(r.to_report()) + repr(bound.child("x").driver())
    text += repr(bound) + repr(bound.child("x"))
    for form in (secret, raw):
        for shown in (form.hex(), base64.b64encode(form).decode(), str(form)):
            assert shown not in text
    assert r.fingerprint in text
    assert len(r.fingerprint) == 32 and r.fingerprint not in secret.hex()


def test_report_has_no_seed_and_flags_test_keys():
    seeded = Randomness.create(123456789)
    report = seeded.to_report()
    assert "123456789" not in json.dumps(report)
    assert report["production_safe"] is False and "NOT FOR PRODUCTION" in report["warning"]
    # a seed's fingerprint would give the seed away to a brute-force search: withheld
    assert seeded.fingerprint not in json.dumps(report) + repr(seeded) + repr(seeded.bind("r"))
    assert report["key_fingerprint"] is None and "few bits" in report["key_fingerprint_withheld"]
    fresh = Randomness.create()
    assert fresh.to_report()["production_safe"] is True
    assert fresh.to_report()["key_fingerprint"] == fresh.fingerprint


def test_nothing_is_drawn_from_an_unbound_key():
    r = Randomness.create(1)
    assert not r.bound
    for draw in (
        lambda: r.child("noise", 1),
        lambda: r.stream_key,
        lambda: r.driver(),
        lambda: r.salt(),
        lambda: r.secret("x"),
        lambda: r.numpy_generator(),
    ):
        with pytest.raises(UnboundRandomnessError, match="not bound to a release"):
            draw()
    assert len(set(r.digest_salts())) == 2  # the one secret an unbound key gives
    bound = r.bind("release-1")
    with pytest.raises(ParameterError, match="already bound"):
        bound.bind("release-2")
    with pytest.raises(ParameterError, match="non-empty release id"):
        r.bind("")


def test_binding_gives_independent_streams_per_release():
    r = Randomness.create(1)
    a, b = r.bind("release-a"), r.bind("release-b")
    assert a.child("noise", 1).stream_key != b.child("noise", 1).stream_key
    assert (
        a.child("noise", 1).stream_key
        == Randomness.create(1).bind("release-a").child("noise", 1).stream_key
    )
    # the digest salts come from the unbound key: the same for every release of the key
    assert a.digest_salts() == b.digest_salts() == r.digest_salts()
    assert a.digest_salts() != Randomness.create(2).digest_salts()


def test_streams_are_independent_and_reproducible():
    r = Randomness.create(1).bind("test")
    keys = {r.stream_key, r.child("a").stream_key, r.child("b").stream_key}
    keys |= {r.child("a", 1).stream_key, r.child("a").child(1).stream_key}
    assert len(keys) == 4  # child("a", 1) and child("a").child(1) name the same stream
    same = Randomness.create(1).bind("test").child("noise", 2).stream_key
    assert r.child("noise", 2).stream_key == same
    assert encode_labels(("ab", "c")) != encode_labels(("a", "bc"))
    assert secret_int(r.stream_key, "x") != secret_int(r.stream_key, "y")
    assert 0 <= r.secret("order") < 2**63
    assert -(2**63) <= r.salt() < 2**63


def test_stream_labels_are_typed():
    r = Randomness.create(1).bind("test")
    assert r.child("noise", 1).stream_key != r.child("noise", "1").stream_key
    assert encode_labels(("noise", 1)) != encode_labels(("noise", "1"))
    assert encode_labels((12,)) != encode_labels(("12",)) != encode_labels((1, 2))
    for bad in (True, 1.0, None, b"x"):
        with pytest.raises(TypeError, match="a stream label is a str or an int"):
            r.child("noise", bad)  # type: ignore[arg-type]
