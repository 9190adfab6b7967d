"""spark-submit's own option table, read from the installed Spark's launcher jar.

spark-submit parses its arguments with ``org.apache.spark.launcher.SparkSubmitOptionParser``,
whose constructor fills two tables of spellings: ``opts`` (the options that take a value,
aliases such as ``-c`` included) and ``switches`` (the options that do not). `schedbridge submit`
needs the first to tell an option's value from the application (``--name app.py app.py``), and
a list kept by hand drifts with every Spark release (4.x added ``--remote`` and
``--extra-properties-file``). Asking a JVM costs about a second per command, so the tables are
read from the class file itself: its constant pool, then the constructor's bytecode, where each
table is the run of string constants loaded (``ldc``) before the ``putfield`` that stores it.
That reads a jar entry and a few kilobytes of bytecode, once per process.
"""
from __future__ import annotations

import struct
import zipfile
from functools import cache
from pathlib import Path

PARSER_CLASS = "org/apache/spark/launcher/SparkSubmitOptionParser.class"
UTF8, STRING, FIELDREF, NAME_AND_TYPE, LONG, DOUBLE = 1, 8, 9, 12, 5, 6
# bytes after the tag of every other constant-pool entry kind (JVMS 4.4)
CONSTANT_SIZES = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4,
                  19: 2, 20: 2}
LDC, LDC_W, PUTFIELD = 0x12, 0x13, 0xB5
# operand bytes of the instructions that have any (JVMS 6.5); the switches and `wide` are refused
OPERANDS = {0x10: 1, 0x11: 2, 0x12: 1, 0x13: 2, 0x14: 2, 0x84: 2, 0xA9: 1, 0xBB: 2, 0xBC: 1, 0xBD: 2,
            0xC0: 2, 0xC1: 2, 0xC5: 3, 0xC6: 2, 0xC7: 2, 0xB9: 4, 0xBA: 4, 0xC8: 4, 0xC9: 4,
            **dict.fromkeys(range(0x15, 0x1A), 1), **dict.fromkeys(range(0x36, 0x3B), 1),
            **dict.fromkeys(range(0x99, 0xA9), 2), **dict.fromkeys(range(0xB2, 0xB9), 2)}


class LauncherError(RuntimeError):
    """Spark's launcher jar is missing or its option table is not where this reader looks."""


def launcher_jar(spark_home: Path) -> Path:
    """The ``spark-launcher`` jar of the Spark at ``spark_home``."""
    found = sorted((spark_home / "jars").glob("spark-launcher_*.jar"))
    if not found:
        raise LauncherError(f"no spark-launcher_*.jar in {spark_home / 'jars'}: is SPARK_HOME a Spark installation?")
    return found[-1]


@cache
def option_tables(jar: Path) -> dict[str, frozenset[str]]:
    """``{"opts": ..., "switches": ...}``: the option spellings of each table in ``jar``'s parser."""
    try:
        with zipfile.ZipFile(jar) as zf:
            data = zf.read(PARSER_CLASS)
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise LauncherError(f"cannot read {PARSER_CLASS} from {jar}: {e}") from None
    try:
        tables = _tables(data)
    except (struct.error, IndexError, KeyError) as e:  # truncated or not a class file
        raise LauncherError(f"cannot parse {PARSER_CLASS} from {jar}: {e!r}") from None
    if "opts" not in tables or "switches" not in tables:
        raise LauncherError(f"{PARSER_CLASS} in {jar} has no opts/switches tables: "
                            "a Spark whose launcher this reader does not know")
    return {name: tables[name] for name in ("opts", "switches")}


def value_options(jar: Path) -> frozenset[str]:
    """The spark-submit options that take a value."""
    return option_tables(jar)["opts"]


def _tables(data: bytes) -> dict[str, frozenset[str]]:
    """Each field the constructor stores, with the string constants loaded since the previous store."""
    pool, pos = _constant_pool(data)
    tables: dict[str, frozenset[str]] = {}
    strings: list[str] = []
    code = _constructor_code(data, pos, pool)
    i = 0
    while i < len(code):
        op = code[i]
        if op in (LDC, LDC_W):
            index = code[i + 1] if op == LDC else struct.unpack_from(">H", code, i + 1)[0]
            if pool[index][0] == STRING:
                strings.append(_utf8(pool, struct.unpack(">H", pool[index][1])[0]))
        elif op == PUTFIELD:
            _, nat = struct.unpack(">HH", pool[struct.unpack_from(">H", code, i + 1)[0]][1])
            tables[_utf8(pool, struct.unpack(">HH", pool[nat][1])[0])] = frozenset(strings)
            strings = []
        elif op in (0xAA, 0xAB, 0xC4):
            raise LauncherError(f"unexpected instruction {op:#x} in {PARSER_CLASS}'s constructor")
        i += 1 + OPERANDS.get(op, 0)
    return tables


def _constant_pool(data: bytes) -> tuple[list[tuple[int, bytes]], int]:
    """The constant pool as (tag, raw bytes) by index (UTF-8 entries without their length), and
    the offset just past it."""
    count = struct.unpack_from(">H", data, 8)[0]
    pool: list[tuple[int, bytes]] = [(0, b"")] * count
    pos, index = 10, 1
    while index < count:
        tag = data[pos]
        size = struct.unpack_from(">H", data, pos + 1)[0] + 2 if tag == UTF8 else CONSTANT_SIZES[tag]
        pool[index] = (tag, data[pos + 3:pos + 1 + size] if tag == UTF8 else data[pos + 1:pos + 1 + size])
        pos += 1 + size
        index += 2 if tag in (LONG, DOUBLE) else 1
    return pool, pos


def _utf8(pool: list[tuple[int, bytes]], index: int) -> str:
    return pool[index][1].decode("utf-8", "replace")


def _constructor_code(data: bytes, pos: int, pool: list[tuple[int, bytes]]) -> bytes:
    """The bytecode of the no-argument constructor, found past the class header and its fields."""
    interfaces = struct.unpack_from(">H", data, pos + 6)[0]
    _, pos = _members(data, pos + 8 + 2 * interfaces, pool)  # the fields
    methods, _ = _members(data, pos, pool)
    code = methods.get(("<init>", "()V"), {}).get("Code")
    if code is None:
        raise LauncherError(f"{PARSER_CLASS} has no constructor without arguments")
    length = struct.unpack_from(">I", code, 4)[0]  # after max_stack and max_locals
    return code[8:8 + length]


def _members(data: bytes, pos: int,
             pool: list[tuple[int, bytes]]) -> tuple[dict[tuple[str, str], dict[str, bytes]], int]:
    """A field or method table: the attributes by name of each (name, descriptor), and the offset
    past it."""
    members: dict[tuple[str, str], dict[str, bytes]] = {}
    count = struct.unpack_from(">H", data, pos)[0]
    pos += 2
    for _ in range(count):
        _, name, descriptor, attributes = struct.unpack_from(">HHHH", data, pos)
        pos += 8
        attrs = members.setdefault((_utf8(pool, name), _utf8(pool, descriptor)), {})
        for _ in range(attributes):
            attr, length = struct.unpack_from(">HI", data, pos)
            attrs[_utf8(pool, attr)] = data[pos + 6:pos + 6 + length]
            pos += 6 + length
    return members, pos
