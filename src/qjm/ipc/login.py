"""A process's Kerberos login for IPC, from the [security] config (design §S.1).

A daemon logs in from its role's keytab, as HDFS's daemons do (a ZKFC as its NameNode); a
user's command from the ticket cache `kinit` filled. The login makes every IpcClient of the
process authenticate; a server built with `server_security` takes only Kerberos callers.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from functools import partial

from qjm.config import ProxyUserConfig, SecuritySettings
from qjm.errors import ConfigError
from qjm.ipc.sasl import (
    ClientSecurity,
    ProxyPolicy,
    ServerSecurity,
    client_security,
    set_client_security,
    set_proxy_policy,
    set_server_security,
)
from qjm.security import http, tls
from qjm.security.gss import SaslError, acceptor_credentials, initiator_credentials, layers_of
from qjm.security.policy import (
    ServicePrincipals,
    admit,
    admit_http,
    server_principals_by_protocol,
)
from qjm.security.principal import KerberosName, canonical_host, with_host
from qjm.security.proxy_users import ProxyRule
from qjm.security.users import os_groups

ROLES = ("namenode", "journalnode", "datanode")


def services_of(settings: SecuritySettings) -> ServicePrincipals:
    """The daemons' principal patterns in settings."""
    return ServicePrincipals(
        namenode=settings.namenode_principal,
        journalnode=settings.journalnode_principal,
        datanode=settings.datanode_principal,
        realm=settings.realm,
    )


def role_principal(settings: SecuritySettings, role: str, host: str) -> tuple[str, str]:
    """(principal, keytab) of role on host: _HOST filled in, the keytab required."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    pattern = services_of(settings).of(role)
    keytab = getattr(settings, f"{role}_keytab")
    if not keytab:
        raise ConfigError(f"security.{role}_keytab: Kerberos needs the {role}'s keytab")
    return with_host(pattern, canonical_host(host)), keytab


def use_krb5_conf(settings: SecuritySettings) -> None:
    """Point this process's Kerberos library at the config's krb5.conf, where one is set."""
    if settings.krb5_conf:
        os.environ["KRB5_CONFIG"] = settings.krb5_conf


def server_security(settings: SecuritySettings, role: str, host: str) -> ServerSecurity | None:
    """The Kerberos side of a server of role bound on host; None under simple auth."""
    if not settings.kerberos:
        return None
    use_krb5_conf(settings)
    principal, keytab = role_principal(settings, role, host)
    try:
        credentials = acceptor_credentials(principal, keytab)
    except SaslError as e:
        raise ConfigError(f"security.{role}_keytab: {e}") from None
    services = services_of(settings)
    return ServerSecurity(
        principal=principal,
        credentials=credentials,
        realm=settings.realm,
        admit=partial(_admit, services=services),
        layers=layers_of(settings.rpc_protection),
    )


def _admit(protocol: str, principal: str, *, services: ServicePrincipals) -> str | None:
    return admit(protocol, principal, services)


def client_login(
    settings: SecuritySettings, role: str | None = None, host: str = "", ccache: str = ""
) -> ClientSecurity | None:
    """An IpcClient's Kerberos side from role's keytab, or (None) a ticket cache; None under
    simple auth. Nothing of the process changes but its krb5.conf."""
    if not settings.kerberos:
        return None
    use_krb5_conf(settings)
    proxy_user = ""
    if role is None:
        credentials = initiator_credentials(ccache=ccache or None)
        principal = str(credentials.name)
        # a user's command acts for HADOOP_PROXY_USER where set, as Hadoop's UGI (§S.14)
        proxy_user = os.environ.get("HADOOP_PROXY_USER", "").strip()
    else:
        principal, keytab = role_principal(settings, role, host or "localhost")
        credentials = initiator_credentials(principal, keytab)
    return ClientSecurity(
        credentials=credentials,
        principal=str(KerberosName.parse(principal).in_realm(settings.realm)),
        realm=settings.realm,
        server_principals=server_principals_by_protocol(services_of(settings)),
        layers=layers_of(settings.rpc_protection),
        proxy_user=proxy_user,
    )


def login(
    settings: SecuritySettings, role: str | None = None, host: str = "", ccache: str = ""
) -> ClientSecurity | None:
    """Log this process in for every IpcClient: role's keytab, or (None) a ticket cache."""
    security = client_login(settings, role, host, ccache)
    set_client_security(security)
    if security is None:
        return None
    if role is None:  # a user's command: its HTTP requests carry SPNEGO too
        http.set_http_security(None, _http_login(settings, security))
    return security


def proxy_rules(proxyusers: Mapping[str, ProxyUserConfig]) -> ProxyPolicy:
    """The proxy users a daemon's servers admit, host names resolved now (design §S.14)."""
    rules = {name: ProxyRule.parse(p.users, p.groups, p.hosts) for name, p in proxyusers.items()}
    return ProxyPolicy(rules, os_groups)


def daemon_login(
    settings: SecuritySettings,
    role: str,
    host: str,
    proxyusers: Mapping[str, ProxyUserConfig] | None = None,
) -> None:
    """Log a daemon of role on host in: its IPC and HTTP servers and clients use Kerberos,
    and its IPC servers admit the configured proxy users."""
    tls.configure(settings)  # its HTTPS clients trust ssl_ca (design §S.13)
    set_proxy_policy(proxy_rules(proxyusers or {}))
    set_server_security(server_security(settings, role, host))
    client = login(settings, role, host)
    if client is None:
        return
    services = services_of(settings)
    principal = with_host(
        str(KerberosName.parse(settings.http_principal).in_realm(settings.realm)),
        canonical_host(host),
    )
    _, keytab = role_principal(settings, role, host)
    try:
        credentials = acceptor_credentials(principal, keytab)
    except SaslError as e:
        raise ConfigError(f"security.http_principal {principal} in {keytab}: {e}") from None
    server = http.HttpSecurity(
        principal=principal,
        credentials=credentials,
        realm=settings.realm,
        admit=partial(_admit_http, services=services),
        administrator=partial(
            http.AdminAcl.parse(settings.cluster_administrators).admits, groups=os_groups
        ),
        instrumentation_requires_admin=settings.instrumentation_requires_admin,
    )
    http.set_http_security(server, _http_login(settings, client))


def _admit_http(path: str, principal: str, *, services: ServicePrincipals) -> str | None:
    return admit_http(path, principal, services)


def _http_login(settings: SecuritySettings, client: ClientSecurity) -> http.HttpLogin:
    pattern = str(KerberosName.parse(settings.http_principal).in_realm(settings.realm))
    return http.HttpLogin(client.credentials, pattern)


@contextlib.contextmanager
def logged_in(settings: SecuritySettings, ccache: str) -> Iterator[ClientSecurity | None]:
    """This process's IpcClients as the ticket cache's principal while the block runs."""
    tls.configure(settings)
    saved, conf = client_security(), os.environ.get("KRB5_CONFIG")
    saved_http = http.http_security()
    try:
        yield login(settings, ccache=ccache)
    finally:
        set_client_security(saved)
        http.set_http_security(*saved_http)
        if conf is None:
            os.environ.pop("KRB5_CONFIG", None)
        else:
            os.environ["KRB5_CONFIG"] = conf


def user_login(settings: SecuritySettings) -> None:
    """Log a user's command in from the ticket cache; a clear error where it holds none."""
    tls.configure(settings)  # its HTTPS clients trust ssl_ca (design §S.13)
    try:
        login(settings)
    except SaslError as e:
        raise ConfigError(
            f"Kerberos is on and there is no usable ticket ({e}); run kinit"
        ) from None
