"""Per-run TLS material for the ``tcp`` runtime: a private CA, the controller's and workers' certificates.

Mutual TLS (stdlib :mod:`ssl`, TLS 1.3 only): the controller presents a certificate for the
name :data:`CONTROLLER_NAME` and requires a client certificate; each worker presents its own
(``mprr-worker-<k>``).  Both sides trust only the run's CA, generated with ``cryptography``
(ECDSA P-256, valid one day) by :func:`make_material` — nothing is reused between runs unless
the user keeps the directory to start workers by hand on other machines.  The CA's private key
is not written to disk.

Files of a material directory: ``ca.pem``, ``controller.pem`` / ``controller.key``,
``worker-<k>.pem`` / ``worker-<k>.key`` (keys ``0600``).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from mprr.domain import check_int
from mprr.errors import ConfigurationError

__all__ = ["CONTROLLER_NAME", "TlsMaterial", "client_context", "make_material", "reuse_or_make_material",
           "server_context"]

CONTROLLER_NAME = "mprr-controller"
"""Name in the controller's certificate (what workers check, whatever the address)."""


@dataclass(frozen=True)
class TlsMaterial:
    """Paths of a run's TLS files."""

    directory: Path

    @property
    def ca(self) -> Path:
        """The run CA's certificate."""
        return self.directory / "ca.pem"

    def cert(self, who: str) -> Path:
        """Certificate of ``"controller"`` or ``"worker-<k>"``."""
        return self.directory / f"{who}.pem"

    def key(self, who: str) -> Path:
        """Private key of ``"controller"`` or ``"worker-<k>"``."""
        return self.directory / f"{who}.key"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def make_material(directory: Path, workers: int, *, hosts: tuple[str, ...] = ()) -> TlsMaterial:
    """Generate a CA, the controller's certificate and ``workers`` worker certificates.

    Parameters
    ----------
    directory
        Where to write the files (created).
    workers
        Number of worker certificates (``worker-0`` .. ``worker-<workers-1>``).
    hosts
        Extra DNS names / IP addresses for the controller certificate (it always carries
        :data:`CONTROLLER_NAME`, ``localhost`` and ``127.0.0.1``).
    """
    check_int("workers", workers, 1)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("mprr run CA")
    ca_cert = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    material = TlsMaterial(directory)
    material.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))

    def issue(who: str, cn: str, server: bool) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        names = [x509.DNSName(cn), *((x509.DNSName("localhost"), *map(_host, ("127.0.0.1", *hosts))) if server else ())]
        cert = (
            x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                  else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        material.cert(who).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(material.key(who), key)

    issue("controller", CONTROLLER_NAME, True)
    for k in range(workers):
        issue(f"worker-{k}", f"mprr-worker-{k}", False)
    return material


def reuse_or_make_material(directory: Path, workers: int, *, hosts: tuple[str, ...] = (),
                           valid_for: datetime.timedelta = datetime.timedelta(hours=1)) -> TlsMaterial:
    """The material already in ``directory`` if it serves this run, else new material.

    Workers started by hand keep the certificates they were given across runs (a scenario
    runs several protocols, each a run of its own): the material in ``directory`` is reused
    when every file is there, the controller certificate carries every host of ``hosts`` and
    no certificate expires within ``valid_for``; otherwise :func:`make_material` replaces it.
    """
    directory = Path(directory)
    material = TlsMaterial(directory)
    who = ["controller", *(f"worker-{k}" for k in range(workers))]
    paths = [material.ca, *(material.cert(w) for w in who), *(material.key(w) for w in who)]
    if all(path.is_file() for path in paths):
        try:
            certs = [x509.load_pem_x509_certificate(material.cert(w).read_bytes()) for w in who]
            certs.append(x509.load_pem_x509_certificate(material.ca.read_bytes()))
            names = certs[0].extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            have = {str(n) for n in names.get_values_for_type(x509.DNSName)}
            have |= {str(n) for n in names.get_values_for_type(x509.IPAddress)}
        except (ValueError, x509.ExtensionNotFound):
            certs, have = [], set()
        wanted = {str(_host(h).value) for h in hosts}
        deadline = datetime.datetime.now(datetime.timezone.utc) + valid_for
        if certs and wanted <= have and all(c.not_valid_after_utc > deadline for c in certs):
            return material
    return make_material(directory, workers, hosts=hosts)


def _host(host: str) -> x509.GeneralName:
    """``host`` as a certificate name: its IP address, else a DNS name."""
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def server_context(material: TlsMaterial) -> ssl.SSLContext:
    """The controller's context: TLS 1.3, its certificate, client certificates required."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(material.cert("controller"), material.key("controller"))
    ctx.load_verify_locations(material.ca)
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def client_context(ca: Path, cert: Path, key: Path) -> ssl.SSLContext:
    """A worker's context: TLS 1.3, trusts only the run CA, checks the controller's name."""
    for what, path in (("CA certificate", ca), ("certificate", cert), ("key", key)):
        if not Path(path).is_file():
            raise ConfigurationError(f"TLS {what} file {str(path)!r} does not exist")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_verify_locations(ca)
    ctx.load_cert_chain(cert, key)
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx
