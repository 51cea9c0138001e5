import pytest
from hypothesis import given, strategies as st

from distcalc.errors import UnitParseError
from distcalc.units import (
    format_rate, format_size, format_time, parse_rate, parse_size, parse_size_range, parse_time,
)


@pytest.mark.parametrize(
    "text, expected",
    [("1GiB", 2**30), ("256MB", 256_000_000), ("1e9", 10**9), ("1048576", 1048576), ("1 KiB", 1024),
     ("4MiB", 4 * 2**20), ("1.5GB", 1_500_000_000), ("8GiB", 8 * 2**30), ("512B", 512), ("1kB", 1000)],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["-1", "1XB", "", "abc", "1.5B", "0", "inf", "1Gb"])
def test_parse_size_rejects(text):
    with pytest.raises(UnitParseError) as info:
        parse_size(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize(
    "text, expected",
    [("450GB/s", 450e9), ("400Gbps", 50e9), ("400Gb/s", 50e9), ("50GiB/s", 50 * 2**30), ("1e11", 1e11)],
)
def test_parse_rate(text, expected):
    assert parse_rate(text) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("text", ["0", "-5GB/s", "fast", "10GB/h"])
def test_parse_rate_rejects(text):
    with pytest.raises(UnitParseError):
        parse_rate(text)


@pytest.mark.parametrize("text, expected", [("1us", 1e-6), ("5us", 5e-6), ("1.5ms", 1.5e-3), ("2e-6", 2e-6), ("3s", 3.0), ("10ns", 1e-8)])
def test_parse_time(text, expected):
    assert parse_time(text) == pytest.approx(expected, rel=1e-12)


def test_parse_time_rejects():
    with pytest.raises(UnitParseError):
        parse_time("-1us")
    with pytest.raises(UnitParseError):
        parse_time("5 parsecs")


def test_size_range_powers_of_two():
    assert parse_size_range("1KiB..8KiB") == [1024, 2048, 4096, 8192]
    assert parse_size_range("1MiB") == [2**20]
    with pytest.raises(UnitParseError):
        parse_size_range("8KiB..1KiB")


def test_format():
    assert format_size(2**30) == "1 GiB"
    assert format_rate(450e9) == "450 GB/s"
    assert format_time(5e-6) == "5 us"
    assert format_time(0.0015) == "1.5 ms"


@given(st.integers(min_value=1, max_value=2**50))
def test_size_roundtrip_plain_bytes(n):
    assert parse_size(str(n)) == n


def test_parse_time_is_exact_for_decimal_inputs():
    assert parse_time("5us") == 5e-06
    assert parse_time("1.5ms") == 0.0015
