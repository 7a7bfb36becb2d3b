"""Real qlogs of a QUIC download over loopback, written by aioquic (qlog 0.3 JSON), with losses.

A server (aioquic, a self-signed certificate made with ``cryptography``) answers one request on
one stream with ``--size`` bytes (an HTTP/0.9-like exchange: the client sends ``GET``, the
server the bytes and FIN). The client's endpoint drops a random share ``--drop`` of the
datagrams it receives and holds back a share ``--delay`` of them for ``--delay-ms`` before
taking them: the server sees losses, and declares some packets lost that were only late (the
ACK for them comes afterwards: spurious losses, as on cellular links). Writes the server's and
the client's qlogs, ``server.qlog`` and ``client.qlog`` in ``--out`` (gzip with ``--gzip``);
with ``--seq`` the same events as qlog 0.3 JSON-SEQ too (``.sqlog``, RFC 7464 records, as quiche
and quic-go write them; aioquic itself writes JSON only).

Only 127.0.0.1 is used; the transfer stops by itself (``--timeout`` bounds it).
Usage: ``python traces/qlog_generate.py --out DIR [--size 3000000] [--drop 0.02] [--delay 0.05]``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gzip
import json
import pathlib
import random
import ssl
import tempfile

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import StreamDataReceived
from aioquic.quic.logger import QuicLogger
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ALPN = ["hq-interop"]


def self_signed(folder: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """A certificate for localhost and its key, as PEM files in ``folder``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def server_protocol(size: int):
    class Server(QuicConnectionProtocol):
        """Answers the first data on a stream with ``size`` bytes and FIN."""

        def quic_event_received(self, event) -> None:
            if isinstance(event, StreamDataReceived) and event.end_stream:
                self._quic.send_stream_data(event.stream_id, bytes(size), end_stream=True)
                self.transmit()

    return Server


def client_protocol(rng: random.Random, drop: float, delay: float, delay_s: float, counts: dict):
    class Client(QuicConnectionProtocol):
        """Drops or delays a random share of the datagrams it receives; waits for the whole answer."""

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.received = 0
            self.done = asyncio.get_event_loop().create_future()

        def datagram_received(self, data, addr) -> None:
            draw = rng.random()
            if draw < drop:
                counts["dropped"] += 1
                return
            if draw < drop + delay:
                counts["delayed"] += 1
                asyncio.get_event_loop().call_later(delay_s, super().datagram_received, data, addr)
                return
            super().datagram_received(data, addr)

        def quic_event_received(self, event) -> None:
            if isinstance(event, StreamDataReceived):
                self.received += len(event.data)
                if event.end_stream and not self.done.done():
                    self.done.set_result(self.received)

    return Client


async def transfer(size: int, drop: float, delay: float, delay_s: float, seed: int, timeout: float):
    """Run one download; return the server's and the client's qlog (dicts) and what was done."""
    rng = random.Random(seed)
    counts = {"dropped": 0, "delayed": 0}
    with tempfile.TemporaryDirectory() as folder:
        cert, key = self_signed(pathlib.Path(folder))
        server_log, client_log = QuicLogger(), QuicLogger()
        server_config = QuicConfiguration(is_client=False, alpn_protocols=ALPN, quic_logger=server_log)
        server_config.load_cert_chain(cert, key)
        server = await serve("127.0.0.1", 0, configuration=server_config, create_protocol=server_protocol(size))
        port = server._transport.get_extra_info("sockname")[1]
        client_config = QuicConfiguration(
            is_client=True, alpn_protocols=ALPN, quic_logger=client_log, verify_mode=ssl.CERT_NONE
        )
        try:
            async with connect(
                "127.0.0.1",
                port,
                configuration=client_config,
                create_protocol=client_protocol(rng, drop, delay, delay_s, counts),
            ) as client:
                stream = client._quic.get_next_available_stream_id()
                client._quic.send_stream_data(stream, b"GET /\r\n", end_stream=True)
                client.transmit()
                received = await asyncio.wait_for(client.done, timeout)
                await asyncio.sleep(2 * delay_s)  # the delayed datagrams and their ACKs land before the close
        finally:
            server.close()
    return server_log.to_dict(), client_log.to_dict(), {"received": received, **counts}


def json_seq(doc: dict) -> bytes:
    """A qlog 0.3 JSON document as JSON-SEQ: a header record holding the trace's fields, then a
    record per event, each after a record separator 0x1E and ending in a newline."""
    (trace,) = doc["traces"]
    header = {
        "qlog_version": doc["qlog_version"],
        "qlog_format": "JSON-SEQ",
        "trace": {k: v for k, v in trace.items() if k != "events"},
    }
    return b"".join(b"\x1e" + json.dumps(record).encode() + b"\n" for record in [header, *trace["events"]])


def write(doc: dict, path: pathlib.Path, compress: bool, seq: bool = False) -> pathlib.Path:
    text = json_seq(doc) if seq else json.dumps(doc).encode()
    if compress:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(text, 9, mtime=0))
    else:
        path.write_bytes(text)
    return path


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--size", type=int, default=3_000_000, help="bytes downloaded")
    parser.add_argument("--drop", type=float, default=0.02, help="share of datagrams the client drops")
    parser.add_argument("--delay", type=float, default=0.05, help="share it takes late")
    parser.add_argument("--delay-ms", type=float, default=40.0, help="how late")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds the download may take")
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--seq", action="store_true", help="also write them as JSON-SEQ (.sqlog)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    server, client, counts = asyncio.run(
        transfer(args.size, args.drop, args.delay, args.delay_ms / 1000, args.seed, args.timeout)
    )
    for doc, name in ((server, "server.qlog"), (client, "client.qlog")):
        print(write(doc, args.out / name, args.gzip))
        if args.seq:
            print(write(doc, args.out / name.replace(".qlog", ".sqlog"), args.gzip, seq=True))
    print(
        f"received {counts['received']:,} bytes; the client dropped {counts['dropped']} datagrams, delayed {counts['delayed']}"
    )


if __name__ == "__main__":
    main()
