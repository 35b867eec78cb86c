"""What a job's index shard says the link used: CFI, devirtualization, memprof.

A DTLTO job's index shard (jobs[].inputs[1]) is an LLVM bitcode file whose
summary block holds what the thin link decided for that job. Some of it
only the ThinLTO backend, which reads the shard, can carry out: type-test
resolutions for control-flow integrity, whole-program devirtualization
decisions, memprof context disambiguation. A compile of the job's module
without its shard (the self-contained mode of distcc.py and icecream.py,
docs/distributors.md) would miss them and be wrong, so those distributors
ask features() first.

The reader is the LLVM bitstream container (llvm/Bitstream/BitCodeEnums.h):
blocks, abbreviations (local and from BLOCKINFO) and records. It descends
only into the module block and its summary block and skips every other
block by its length, so a shard of any size costs a few reads.
"""

# Block ids (llvm/Bitcode/LLVMBitCodes.h, FIRST_APPLICATION_BLOCKID = 8).
BLOCKINFO_BLOCK = 0
MODULE_BLOCK = 8
SUMMARY_BLOCKS = (20, 24)  # GLOBALVAL_SUMMARY, FULL_LTO_GLOBALVAL_SUMMARY

# Summary record codes (FS_*) and what needs them in the backend.
CFI = "control-flow integrity (-fsanitize=cfi)"
WPD = "whole-program devirtualization (-fwhole-program-vtables)"
TYPE_IDS = "type-test resolutions (control-flow integrity or whole-program devirtualization)"
MEMPROF = "memprof (-fmemory-profile-use)"
FEATURES = {
    11: CFI,  # TYPE_TESTS
    17: CFI,  # CFI_FUNCTION_DEFS
    18: CFI,  # CFI_FUNCTION_DECLS
    12: WPD, 13: WPD, 14: WPD, 15: WPD,  # TYPE_{TEST_ASSUME,CHECKED_LOAD}_{,CONST_}VCALL(S)
    22: WPD,  # TYPE_ID_METADATA
    21: TYPE_IDS,  # TYPE_ID
    **{code: MEMPROF for code in range(26, 34)},  # CALLSITE_INFO .. ALLOC_INFO_NO_CONTEXT
}

_MAGIC = b"BC\xc0\xde"
_WRAPPER_MAGIC = 0x0B17C0DE


class BitcodeError(ValueError):
    """Not a bitcode file we can read. str() says what is wrong."""


class _Bits:
    def __init__(self, data: bytes, start: int, end: int):
        self.data, self.pos, self.end = data, start * 8, end * 8

    def read(self, width: int) -> int:
        if width == 0:
            return 0
        if self.pos + width > self.end:
            raise BitcodeError("it ends in the middle of a record")
        first, last = self.pos >> 3, (self.pos + width + 7) >> 3
        value = int.from_bytes(self.data[first:last], "little") >> (self.pos & 7)
        self.pos += width
        return value & ((1 << width) - 1)

    def vbr(self, width: int) -> int:
        value, shift, high = 0, 0, 1 << (width - 1)
        while True:
            piece = self.read(width)
            value |= (piece & (high - 1)) << shift
            if not piece & high:
                return value
            shift += width - 1
            if shift > 64:
                raise BitcodeError("a number in it is too long")

    def align32(self) -> None:
        self.pos = (self.pos + 31) & ~31
        if self.pos > self.end:
            raise BitcodeError("it ends in the middle of a block")


def _read_abbrev(bits: _Bits) -> list:
    ops = []
    count = bits.vbr(5)
    i = 0
    while i < count:
        if bits.read(1):
            ops.append(("literal", bits.vbr(8)))
        else:
            kind = bits.read(3)
            if kind in (1, 2):  # Fixed, VBR
                ops.append(({1: "fixed", 2: "vbr"}[kind], bits.vbr(5)))
            elif kind in (3, 4, 5):  # Array, Char6, Blob
                ops.append(({3: "array", 4: "char6", 5: "blob"}[kind], 0))
            else:
                raise BitcodeError(f"unknown abbreviation encoding {kind}")
        i += 1
    return ops


def _scalar(bits: _Bits, op) -> int:
    kind, width = op
    if kind == "literal":
        return width
    if kind == "fixed":
        return bits.read(width)
    if kind == "vbr":
        return bits.vbr(width)
    if kind == "char6":
        return bits.read(6)
    raise BitcodeError("an abbreviation nests arrays or blobs")


def _abbreviated_code(bits: _Bits, ops: list) -> int:
    """Read one abbreviated record; return its code (its first operand)."""
    values = []
    i = 0
    while i < len(ops):
        kind = ops[i][0]
        if kind == "array":
            if i + 1 >= len(ops):
                raise BitcodeError("an array abbreviation has no element type")
            for _ in range(bits.vbr(6)):
                values.append(_scalar(bits, ops[i + 1]))
            i += 2
            continue
        if kind == "blob":
            length = bits.vbr(6)
            bits.align32()
            bits.pos += length * 8
            bits.align32()
            values.append(0)
        else:
            values.append(_scalar(bits, ops[i]))
        i += 1
    if not values:
        raise BitcodeError("a record has no code")
    return values[0]


def _walk(bits: _Bits, width: int, block: int, info: dict, found: set, depth: int) -> None:
    """Read the body of a block up to its END_BLOCK, adding to found the
    codes of records in summary blocks."""
    if depth > 8:
        raise BitcodeError("its blocks nest too deeply")
    abbrevs = list(info.get(block, []))
    info_target = None  # BLOCKINFO: the block SETBID names
    while True:
        abbrev = bits.read(width)
        if abbrev == 0:  # END_BLOCK
            bits.align32()
            return
        if abbrev == 1:  # ENTER_SUBBLOCK
            child, child_width = bits.vbr(8), bits.vbr(4)
            bits.align32()
            words = bits.read(32)
            body_end = bits.pos + words * 32
            if body_end > bits.end:
                raise BitcodeError("a block runs past the end of the file")
            if child == BLOCKINFO_BLOCK or (block == MODULE_BLOCK and child in SUMMARY_BLOCKS):
                _walk(bits, child_width, child, info, found, depth + 1)
            bits.pos = body_end  # skip what we do not need (or did not read)
            continue
        if abbrev == 2:  # DEFINE_ABBREV
            ops = _read_abbrev(bits)
            if block == BLOCKINFO_BLOCK:
                if info_target is None:
                    raise BitcodeError("BLOCKINFO defines an abbreviation before SETBID")
                info.setdefault(info_target, []).append(ops)
            else:
                abbrevs.append(ops)
            continue
        if abbrev == 3:  # UNABBREV_RECORD
            code, count = bits.vbr(6), bits.vbr(6)
            operands = [bits.vbr(6) for _ in range(count)]
        else:
            index = abbrev - 4
            if index >= len(abbrevs):
                raise BitcodeError(f"a record uses undefined abbreviation {abbrev}")
            code, operands = _abbreviated_code(bits, abbrevs[index]), None
        if block == BLOCKINFO_BLOCK and code == 1:  # SETBID
            if not operands:
                raise BitcodeError("SETBID names no block")
            info_target = operands[0]
        elif block in SUMMARY_BLOCKS:
            found.add(code)


def record_codes(path: str) -> set[int]:
    """The record codes in the summary blocks of the bitcode file at path.
    OSError if it cannot be read, BitcodeError if it is not bitcode."""
    with open(path, "rb") as f:
        data = f.read()
    start, end = 0, len(data)
    if len(data) >= 20 and int.from_bytes(data[:4], "little") == _WRAPPER_MAGIC:
        start = int.from_bytes(data[8:12], "little")
        end = start + int.from_bytes(data[12:16], "little")
        if end > len(data):
            raise BitcodeError("its wrapper header points past the end")
    if data[start:start + 4] != _MAGIC:
        raise BitcodeError("it is not LLVM bitcode")
    bits = _Bits(data, start + 4, end - (end - start - 4) % 4)
    found: set[int] = set()
    info: dict = {}
    while bits.end - bits.pos >= 32:  # top level: abbreviation width 2
        if bits.read(2) != 1:
            raise BitcodeError("it has something other than a block at the top level")
        block, width = bits.vbr(8), bits.vbr(4)
        bits.align32()
        words = bits.read(32)
        body_end = bits.pos + words * 32
        if body_end > bits.end:
            raise BitcodeError("a block runs past the end of the file")
        if block in (BLOCKINFO_BLOCK, MODULE_BLOCK):
            _walk(bits, width, block, info, found, 1)
        bits.pos = body_end
    return found


def features(path: str) -> list[str]:
    """What the shard at path says the job's backend must carry out beyond
    an ordinary compile (CFI, WPD, TYPE_IDS, MEMPROF), each once, in that
    order; [] for an ordinary job."""
    codes = record_codes(path)
    named = {FEATURES[c] for c in codes if c in FEATURES}
    if named & {CFI, WPD}:
        named.discard(TYPE_IDS)  # said more precisely already
    return [f for f in (CFI, WPD, TYPE_IDS, MEMPROF) if f in named]
