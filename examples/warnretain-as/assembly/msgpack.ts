// A streaming MessagePack reader and a writer, no more than warnretain needs
// of the kubeplug wire types (abi/SPEC.md, "Encoding"): the reader walks the
// request once, the caller keeps the fields it reads and skips the rest
// without building anything for them; the writer appends the answer to one
// growing buffer. There is no MessagePack library that asc compiles
// (RATIONALE.md, "Why does warnretain-as read MessagePack with a reader of
// its own?").
//
// Malformed input (a truncated message, an unexpected type where a map,
// array or string must be) traps: the host sends well-formed messages, and
// a trap fails the call.

// Reader reads one MessagePack message from buf.
export class Reader {
  private buf: Uint8Array;
  private pos: i32 = 0;
  // The last key read by nextKey, as an offset and a length in buf.
  private keyStart: i32 = 0;
  private keyLen: i32 = 0;

  constructor(buf: Uint8Array) {
    this.buf = buf;
  }

  private byte(): u8 {
    const b = this.buf[this.pos];
    this.pos++;
    return b;
  }

  private be(n: i32): u32 {
    let v: u32 = 0;
    for (let i = 0; i < n; i++) v = (v << 8) | this.byte();
    return v;
  }

  // nil consumes a nil and reports whether there was one.
  nil(): bool {
    if (this.buf[this.pos] != 0xc0) return false;
    this.pos++;
    return true;
  }

  // mapLen reads a map's header and returns its number of pairs; nil is
  // an empty map, as the host's own decoder takes it.
  mapLen(): i32 {
    const b = this.byte();
    if ((b & 0xf0) == 0x80) return b & 0x0f;
    if (b == 0xde) return this.be(2);
    if (b == 0xdf) return this.be(4);
    if (b == 0xc0) return 0;
    unreachable();
    return 0;
  }

  // arrayLen is mapLen for an array.
  arrayLen(): i32 {
    const b = this.byte();
    if ((b & 0xf0) == 0x90) return b & 0x0f;
    if (b == 0xdc) return this.be(2);
    if (b == 0xdd) return this.be(4);
    if (b == 0xc0) return 0;
    unreachable();
    return 0;
  }

  // bytesLen reads a str or bin header and returns the length of the bytes
  // that follow; nil is empty.
  private bytesLen(): i32 {
    const b = this.byte();
    if ((b & 0xe0) == 0xa0) return b & 0x1f;
    if (b == 0xd9 || b == 0xc4) return this.be(1);
    if (b == 0xda || b == 0xc5) return this.be(2);
    if (b == 0xdb || b == 0xc6) return this.be(4);
    if (b == 0xc0) return 0;
    unreachable();
    return 0;
  }

  // str reads a string (str or nil) and decodes it from UTF-8.
  str(): string {
    const n = this.bytesLen();
    if (n > this.buf.length - this.pos) unreachable();
    const s = String.UTF8.decodeUnsafe(this.buf.dataStart + <usize>this.pos, <usize>n);
    this.pos += n;
    return s;
  }

  // bin reads a byte string (bin, str or nil) as a view of the input.
  bin(): Uint8Array {
    const n = this.bytesLen();
    const b = this.buf.subarray(this.pos, this.pos + n);
    if (b.length != n) unreachable();
    this.pos += n;
    return b;
  }

  // nextKey reads a map's key, for is to compare without decoding it.
  nextKey(): void {
    this.keyLen = this.bytesLen();
    this.keyStart = this.pos;
    this.pos += this.keyLen;
    if (this.pos > this.buf.length) unreachable();
  }

  // is reports whether the last key read is name, which is ASCII.
  is(name: string): bool {
    if (name.length != this.keyLen) return false;
    for (let i = 0; i < this.keyLen; i++) {
      if (<u32>this.buf[this.keyStart + i] != <u32>name.charCodeAt(i)) return false;
    }
    return true;
  }

  // skip skips one value of any type, nested ones included.
  skip(): void {
    let left = 1; // values still to skip
    while (left > 0) {
      left--;
      const b = this.byte();
      if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) continue; // fixint, nil, bool
      if ((b & 0xf0) == 0x80) { left += 2 * (b & 0x0f); continue; } // fixmap
      if ((b & 0xf0) == 0x90) { left += b & 0x0f; continue; } // fixarray
      if ((b & 0xe0) == 0xa0) { this.pos += b & 0x1f; continue; } // fixstr
      // What to step over after the header; a length is read first, as
      // reading it moves pos.
      let n: u32 = 0;
      switch (b) {
        case 0xc4: case 0xd9: n = this.be(1); break; // bin8, str8
        case 0xc5: case 0xda: n = this.be(2); break;
        case 0xc6: case 0xdb: n = this.be(4); break;
        case 0xc7: n = this.be(1) + 1; break; // ext8..32: length, type, data
        case 0xc8: n = this.be(2) + 1; break;
        case 0xc9: n = this.be(4) + 1; break;
        case 0xcc: case 0xd0: n = 1; break; // uint8, int8
        case 0xcd: case 0xd1: n = 2; break;
        case 0xca: case 0xce: case 0xd2: n = 4; break; // float32, uint32, int32
        case 0xcb: case 0xcf: case 0xd3: n = 8; break;
        case 0xd4: n = 2; break; // fixext1..16: type, data
        case 0xd5: n = 3; break;
        case 0xd6: n = 5; break;
        case 0xd7: n = 9; break;
        case 0xd8: n = 17; break;
        case 0xdc: left += this.be(2); break;
        case 0xdd: left += this.be(4); break;
        case 0xde: left += 2 * this.be(2); break;
        case 0xdf: left += 2 * this.be(4); break;
        default: unreachable(); // 0xc1 is never used
      }
      if (n > <u32>(this.buf.length - this.pos)) unreachable();
      this.pos += n;
      if (this.pos > this.buf.length) unreachable();
    }
  }
}

// Writer appends MessagePack values to a buffer that grows as needed.
export class Writer {
  private buf: Uint8Array = new Uint8Array(512);
  private len: i32 = 0;

  private room(n: i32): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const grown = new Uint8Array(size);
    memory.copy(grown.dataStart, this.buf.dataStart, <usize>this.len);
    this.buf = grown;
  }

  private header(small: u8, n: i32, b16: u8, b32: u8): void {
    this.room(5);
    if (n < 16) {
      this.buf[this.len++] = small | <u8>n;
    } else if (n <= 0xffff) {
      this.buf[this.len++] = b16;
      this.buf[this.len++] = <u8>(n >> 8);
      this.buf[this.len++] = <u8>n;
    } else {
      this.buf[this.len++] = b32;
      this.buf[this.len++] = <u8>(n >> 24);
      this.buf[this.len++] = <u8>(n >> 16);
      this.buf[this.len++] = <u8>(n >> 8);
      this.buf[this.len++] = <u8>n;
    }
  }

  map(n: i32): Writer {
    this.header(0x80, n, 0xde, 0xdf);
    return this;
  }

  array(n: i32): Writer {
    this.header(0x90, n, 0xdc, 0xdd);
    return this;
  }

  // uint writes a small non-negative integer (a positive fixint).
  uint(v: u8): Writer {
    if (v > 0x7f) unreachable();
    this.room(1);
    this.buf[this.len++] = v;
    return this;
  }

  // str writes s, UTF-8 encoded.
  str(s: string): Writer {
    const n = String.UTF8.byteLength(s);
    this.room(5 + n);
    if (n < 32) {
      this.buf[this.len++] = 0xa0 | <u8>n;
    } else if (n <= 0xff) {
      this.buf[this.len++] = 0xd9;
      this.buf[this.len++] = <u8>n;
    } else {
      this.header(0, n, 0xda, 0xdb); // n >= 256: never the fixed form
    }
    String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, this.buf.dataStart + <usize>this.len);
    this.len += n;
    return this;
  }

  // bytes returns what was written, as a view of the buffer.
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }
}
