#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the seed corpus of the tcp fuzz targets (tests/fuzz/corpus/*).

The frames follow the layout documented in src/transport/tcp/tcp_wire.h.
tcp_conn seeds use the harness's placeholders: rkey 0xaaaaaaaa is the
region's rkey, a raddr whose high half is 0xbbbbbbbb is region + low half.
Run it again after a format change; CI only reads the files.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
RK = 0xAAAAAAAA
REM_INV_REQ, REM_ACCESS, REM_OP, RNR_EXC = 9, 10, 11, 13


def ra(off):
    return 0xBBBBBBBB00000000 | off


def common(t, flags, plen):
    return struct.pack('<BBHI', t, flags, 0, plen)


def hello(pdata=b'', version=1, rnr=1000):
    return common(1, 0, len(pdata)) + struct.pack(
        '<IHHII', 0x54524D50, version, 0, rnr, 0) + pdata


def accept(pdata=b''):
    return common(2, 0, len(pdata)) + struct.pack('<HHI', 1, 0, 1000) + pdata


def reject(reason):
    return common(3, 0, 0) + struct.pack('<II', reason, 0)


def write(seq, rkey, raddr, payload, imm=None):
    return common(16, 1 if imm is not None else 0, len(payload)) + struct.pack(
        '<IIQII', seq, rkey, raddr, imm or 0, 0) + payload


def read(seq, rkey, raddr, n):
    return common(17, 0, 0) + struct.pack('<IIQQ', seq, rkey, raddr, n)


def atomic(seq, rkey, raddr, value):
    return common(18, 0, 0) + struct.pack('<IIQ', seq, rkey, raddr) + value


def flush(seq, rkey, raddr, n, persistent):
    return common(19, 0, 0) + struct.pack('<IIQQII', seq, rkey, raddr, n,
                                          1 if persistent else 0, 0)


def send(seq, payload, imm=None):
    return common(20, 1 if imm is not None else 0, len(payload)) + struct.pack(
        '<II', seq, imm or 0) + payload


def ack(seq):
    return common(32, 0, 0) + struct.pack('<II', seq, 0)


def read_resp(seq, payload):
    return common(33, 0, len(payload)) + struct.pack('<II', seq, 0) + payload


def nak(seq, status):
    return common(34, 0, 0) + struct.pack('<II', seq, status)


def disconnect():
    return common(35, 0, 0)


def data(n, seed=1):
    return bytes((i * 31 + seed) & 0xFF for i in range(n))


WIRE = {
    'hello': hello(b'pmrep'),
    'hello_max_pdata': hello(data(56)),
    'accept': accept(data(196)),
    'reject': reject(1),
    'write_imm': write(0, 0x1234, 0x7F0000001000, data(64), imm=7),
    'read': read(1, 0x1234, 0x7F0000001000, 4096),
    'atomic': atomic(2, 0x1234, 0x7F0000001008, data(8)),
    'flush': flush(3, 0x1234, 0x7F0000001000, 1 << 20, True),
    'send': send(4, data(100), imm=9),
    'ack': ack(0xFFFFFFFF),
    'read_resp': read_resp(5, data(128)),
    'nak': nak(6, REM_ACCESS),
    'disconnect': disconnect(),
    'stream': write(0, 1, 2, data(10)) + ack(0) + read(1, 1, 2, 3) +
    read_resp(0, data(3)) + disconnect(),
    'truncated': flush(3, 1, 2, 3, False)[:30],
}

CONN = {
    'write': write(0, RK, ra(0), data(64)),
    'write_imm': write(0, RK, ra(128), data(32), imm=5),
    'write_big': write(0, RK, ra(0), data(40000)),
    'read': read(0, RK, ra(0), 256),
    'atomic': atomic(0, RK, ra(8), data(8)),
    'atomic_unaligned': atomic(0, RK, ra(9), data(8)),
    'flush_persistent': write(0, RK, ra(0), data(64)) +
    flush(1, RK, ra(0), 64, True),
    'flush_visibility': flush(0, RK, ra(4096), 4096, False),
    'send': send(0, data(100)),
    'send_imm': send(0, data(16), imm=3),
    'send_too_long': send(0, data(300)),
    'three_sends': send(0, data(8)) + send(1, data(8)) + send(2, data(8)),
    'bad_rkey': write(0, 0x1234, ra(0), data(8)),
    'out_of_range': write(0, RK, ra(65536 - 4), data(8)),
    'read_out_of_range': read(0, RK, ra(65000), 1000),
    'out_of_sequence': write(5, RK, ra(0), data(8)),
    'responses': ack(0) + read_resp(1, data(128)) + ack(2) + ack(3) +
    ack(4) + ack(5),
    'nak': ack(0) + nak(1, REM_ACCESS),
    'nak_rnr': nak(2, RNR_EXC),
    'read_resp_wrong_len': read_resp(1, data(64)),
    'ack_unsent': ack(40),
    'disconnect': write(0, RK, ra(0), data(8)) + disconnect(),
    'hello_again': hello(),
    'mixed': write(0, RK, ra(0), data(8)) + ack(0) + read(1, RK, ra(0), 64) +
    read_resp(1, data(128)) + send(2, data(10)) + ack(3) +
    flush(3, RK, ra(0), 8, True) + nak(4, REM_OP) + write(4, RK, ra(0), data(3)),
    'garbage': bytes(range(256)),
}


def emit(target, seeds):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    for name, blob in seeds.items():
        with open(os.path.join(d, name), 'wb') as f:
            f.write(blob)


emit('tcp_wire', WIRE)
emit('tcp_conn', CONN)
