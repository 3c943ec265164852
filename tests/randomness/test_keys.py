"""Release keys: modes, key files, fingerprints, stream derivations, nothing secret leaks."""

from __future__ import annotations

import base64
import json

import pytest

from spark_dp.errors import ParameterError
from spark_dp.randomness import Randomness, ReleaseKey
from spark_dp.randomness.keys import encode_labels, secret_int


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
    path = tmp_path / "key"
    path.write_bytes(bytes(range(40)))
    a, b = Randomness.from_key_file(str(path)), Randomness.from_key_file(str(path))
    assert a.mode == "key-file" and a.fingerprint == b.fingerprint and not a.seeded
    other = tmp_path / "other"
    other.write_bytes(bytes(range(1, 41)))
    assert Randomness.from_key_file(str(other)).fingerprint != a.fingerprint


@pytest.mark.parametrize("content", [b"", b"x" * 31])
def test_short_key_files_are_refused(tmp_path, content):
    path = tmp_path / "key"
    path.write_bytes(content)
    with pytest.raises(ParameterError, match=rf"holds {len(content)} bytes.*at least 32"):
        ReleaseKey.from_file(path)


def test_a_missing_key_file_is_refused(tmp_path):
    with pytest.raises(ParameterError, match=r"--noise-key-file .* cannot be read"):
        ReleaseKey.from_file(tmp_path / "nope")


def test_the_key_never_shows(tmp_path):
    path = tmp_path / "key"
    raw = bytes(range(100, 140))
    path.write_bytes(raw)
    r = Randomness.from_key_file(str(path))
    secret = r.key.secret
    text = repr(r) + repr(r.key) + json.dumps(r.to_report()) + repr(r.child("x").driver())
    for form in (secret, raw):
        for shown in (form.hex(), base64.b64encode(form).decode(), str(form)):
            assert shown not in text
    assert r.fingerprint in text
    assert len(r.fingerprint) == 32 and r.fingerprint not in secret.hex()


def test_report_has_no_seed_and_flags_test_keys():
    seeded = Randomness.create(123456789).to_report()
    assert "123456789" not in json.dumps(seeded)
    assert seeded["production_safe"] is False and "NOT FOR PRODUCTION" in seeded["warning"]
    assert Randomness.create().to_report()["production_safe"] is True


def test_streams_are_independent_and_reproducible():
    r = Randomness.create(1)
    keys = {r.stream_key, r.child("a").stream_key, r.child("b").stream_key}
    keys |= {r.child("a", 1).stream_key, r.child("a").child(1).stream_key}
    assert len(keys) == 4  # child("a", 1) and child("a").child(1) name the same stream
    assert r.child("noise", 2).stream_key == Randomness.create(1).child("noise", 2).stream_key
    assert encode_labels(("ab", "c")) != encode_labels(("a", "bc"))
    assert secret_int(r.stream_key, "x") != secret_int(r.stream_key, "y")
    assert 0 <= r.secret("order") < 2**63
    assert -(2**63) <= r.salt() < 2**63
