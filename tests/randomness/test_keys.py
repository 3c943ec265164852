"""Release keys: modes, key files and their checks, fingerprints, binding, typed stream labels,
nothing secret leaks."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import stat

import pytest

from spark_dp.errors import ParameterError
from spark_dp.randomness import KeyReusedError, Randomness, ReleaseKey, UnboundRandomnessError
from spark_dp.randomness.key_file import (
    KEY_FILE_HEADER,
    KeyFileContent,
    encode_key_file,
    write_key_file,
)
from spark_dp.randomness.keys import FINGERPRINT_SCRYPT, derive, encode_labels, secret_int


def _key_file(path, content: bytes | None = None, mode: int = 0o600):
    """A key file keygen wrote (``content`` None), or a file holding ``content``."""
    if content is None:
        write_key_file(path)
    else:
        path.write_bytes(content)
    path.chmod(mode)
    return path


def _forged(key_id: bytes, secret: bytes) -> bytes:
    """A file of the right format around a secret of the caller's choice."""
    return encode_key_file(KeyFileContent(key_id, secret))


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
    path = _key_file(tmp_path / "key")
    a, b = Randomness.from_key_file(str(path)), Randomness.from_key_file(str(path))
    assert a.mode == "key-file" and a.fingerprint == b.fingerprint and not a.seeded
    assert a.key == b.key  # equal keys, two objects (each binds once)
    other = _key_file(tmp_path / "other")
    assert Randomness.from_key_file(str(other)).fingerprint != a.fingerprint
    os.chmod(path, 0o400)  # read-only for its owner: fine
    assert Randomness.from_key_file(str(path)).fingerprint == a.fingerprint


def test_keygen_writes_the_format_0600_and_never_overwrites(tmp_path):
    old = os.umask(0)  # a permissive umask changes nothing
    try:
        content = write_key_file(tmp_path / "key")
    finally:
        os.umask(old)
    path = tmp_path / "key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text("ascii").splitlines()
    assert text[0] == KEY_FILE_HEADER == "spark-dp release key v1"
    assert text[1] == f"id {content.key_id.hex()}" and text[2] == f"secret {content.secret.hex()}"
    assert text[3].startswith("check ") and len(text) == 4
    assert ReleaseKey.from_file(path).secret == content.secret
    assert [p.name for p in tmp_path.iterdir()] == ["key"]  # no temporary file left
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        write_key_file(path)
    (tmp_path / "link").symlink_to(tmp_path / "absent")
    with pytest.raises(FileExistsError):
        write_key_file(tmp_path / "link")  # a dangling link is not followed
    assert path.read_bytes() == before and not (tmp_path / "absent").exists()


def test_the_keygen_command(tmp_path, capsys):
    from spark_dp.cli import main

    path = tmp_path / "k"
    assert main(["keygen", "--out", str(path)]) == 0
    fingerprint = ReleaseKey.from_file(path).fingerprint
    assert capsys.readouterr().out == f"wrote release key {path} (fingerprint {fingerprint})\n"
    before = path.read_bytes()
    assert main(["keygen", "--out", str(path)]) == 2
    err = capsys.readouterr().err
    assert "exists; a key file is never overwritten" in err and err.count("\n") == 1
    assert main(["keygen", "--out", str(path), "--if-missing"]) == 0
    assert "kept release key" in capsys.readouterr().out and path.read_bytes() == before
    raw = _key_file(tmp_path / "raw", os.urandom(32))
    assert main(["keygen", "--out", str(raw), "--if-missing"]) == 2  # kept only if it is a key
    assert "not a spark-dp key file" in capsys.readouterr().err
    assert main(["keygen", "--out", str(tmp_path / "no" / "k")]) == 2
    assert "cannot create" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "not a spark-dp key file"),
        (os.urandom(32), "not a spark-dp key file"),  # raw bytes, even random ones
        (os.urandom(48), "not a spark-dp key file"),
        (bytes(31) + b"\x01", "not a spark-dp key file"),
        (b"correct horse battery staple and more words\n", "not a spark-dp key file"),
        (b"spark-dp release key v2\nid 00\n", "format 'v2', this spark_dp reads 'v1'"),
        (b"spark-dp release key v1\n", "is damaged"),
        (_forged(bytes(16), os.urandom(32))[:-3] + b"00\n", "is damaged"),  # checksum
        (_forged(bytes(16), os.urandom(32)).replace(b"id ", b"id  "), "is damaged"),
        (_forged(os.urandom(16), bytes(31) + b"\x01"), r"not random bytes \(2 distinct"),
        (_forged(os.urandom(16), b"correct horse battery staple 123"), "printable text"),
        (_forged(os.urandom(16), bytes(range(15)) * 2 + b"\x00\x01"), "15 distinct byte"),
        (b"x" * 2000, "too large"),
    ],
    ids=lambda v: None if isinstance(v, str) else f"{len(v)}-bytes",  # random bytes: stable ids
)
def test_anything_but_a_key_file_is_refused_with_how_to_make_one(tmp_path, content, why):
    path = _key_file(tmp_path / "key", content)
    with pytest.raises(ParameterError, match=why) as info:
        ReleaseKey.from_file(path)
    message = str(info.value)
    assert "\n" not in message and "spark-dp keygen --out key" in message


def test_a_key_file_survives_a_secret_store_newline_style(tmp_path):
    text = encode_key_file(KeyFileContent(os.urandom(16), os.urandom(32)))
    crlf = _key_file(tmp_path / "crlf", text.replace(b"\n", b"\r\n"))
    bare = _key_file(tmp_path / "bare", text.rstrip(b"\n"))
    assert ReleaseKey.from_file(crlf) == ReleaseKey.from_file(bare)


@pytest.mark.parametrize("mode", [0o644, 0o666, 0o640, 0o604, 0o620, 0o602, 0o700 | 0o010])
def test_key_files_others_may_read_or_write_are_refused(tmp_path, mode):
    path = _key_file(tmp_path / "key", None, mode)
    with pytest.raises(ParameterError, match=rf"mode 0{mode:o}.*owner only.*chmod 600 ") as info:
        ReleaseKey.from_file(path)
    assert "\n" not in str(info.value)


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


def test_a_key_files_fingerprint_is_a_salted_scrypt(tmp_path):
    """The fingerprint of a key file costs one scrypt (N = 2^14, r = 8) per guessed key, salted
    by the file's random id: no table of guesses serves two key files, and the unsalted HMAC that
    gave a guessable key away in one hash is gone."""
    key = ReleaseKey.from_file(_key_file(tmp_path / "k"))
    assert FINGERPRINT_SCRYPT == {"n": 2**14, "r": 8, "p": 1}
    expected = hashlib.scrypt(
        key.secret, salt=b"spark_dp/v3/key-fingerprint\x00" + key.key_id, n=2**14, r=8, p=1,
        maxmem=64 << 20, dklen=16,
    )  # fmt: skip
    assert key.fingerprint == expected.hex()
    assert key.fingerprint != derive(key.secret, "spark_dp/v1/key-fingerprint")[:16].hex()
    same_secret = _key_file(tmp_path / "again", _forged(os.urandom(16), key.secret))
    assert ReleaseKey.from_file(same_secret).fingerprint != key.fingerprint  # salted per file


def test_the_key_never_shows(tmp_path):
    path = _key_file(tmp_path / "key")
    raw = path.read_bytes()
    r = Randomness.from_key_file(str(path))
    secret, key_id = r.key.secret, r.key.key_id
    bound = r.bind("release")
    text = repr(r) + repr(r.key) + json.dumps(r.to_report()) + repr(bound.child("x").driver())
    text += repr(bound) + repr(bound.child("x"))
    for form in (secret, raw, key_id):
        for shown in (form.hex(), base64.b64encode(form).decode(), str(form)):
            assert shown not in text
    assert r.fingerprint in text
    assert len(r.fingerprint) == 32 and r.fingerprint not in raw.decode()


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
    a, b = r.bind("release-a"), Randomness.create(1).bind("release-b")
    assert a.child("noise", 1).stream_key != b.child("noise", 1).stream_key
    assert (
        a.child("noise", 1).stream_key
        == Randomness.create(1).bind("release-a").child("noise", 1).stream_key
    )
    # the digest salts come from the unbound key: the same for every release of the key
    assert a.digest_salts() == b.digest_salts() == r.digest_salts()
    assert a.digest_salts() != Randomness.create(2).digest_salts()


@pytest.mark.parametrize("make", ["entropy", "seed", "file"])
def test_a_key_binds_once(tmp_path, make):
    """A second bind of one key object raises, whatever the release id (the same one too: an
    entropy key bound without a digest gets the same id on other rows), also through a copy
    that shares the key; a key made anew binds again."""
    fresh = {
        "entropy": Randomness.create,
        "seed": lambda: Randomness.create(3),
        "file": lambda: Randomness.from_key_file(str(tmp_path / "k")),
    }[make]
    if make == "file":
        write_key_file(tmp_path / "k")
    r = fresh()
    bound = r.bind("release-1")
    for again in ("release-2", "release-1"):
        with pytest.raises(KeyReusedError, match="create a fresh key per release") as info:
            r.bind(again)
        assert "\n" not in str(info.value)
    with pytest.raises(KeyReusedError):
        Randomness(r.key).bind("release-3")  # another Randomness around the same key object
    assert bound.child("noise", 1).stream_key  # the first binding is unaffected
    if make != "entropy":  # the same key material, made anew: bound to its own release
        assert fresh().bind("release-1").stream_key == bound.stream_key


def test_a_bound_key_crosses_to_executors_and_keeps_its_streams():
    bound = Randomness.create(4).bind("release")
    copy = pickle.loads(pickle.dumps(bound))
    assert copy.child("noise", 1).stream_key == bound.child("noise", 1).stream_key
    assert copy.key == bound.key and copy.fingerprint == bound.fingerprint


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
