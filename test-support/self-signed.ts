/**
 * A self-signed certificate for 127.0.0.1 (and `erplink-test.local`), valid
 * until 2125, for tests of TLS handshakes against an untrusted back end.
 * Generated once with
 * `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 36500 -subj /CN=erplink-test.local -addext subjectAltName=DNS:erplink-test.local,IP:127.0.0.1`.
 * Not a secret: it protects nothing.
 */

/** The private key (PEM). */
export const SELF_SIGNED_KEY = `
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8SEoPPi9C69yt6LO
N4sa60BsQ99GorjuWb1j04MUPwuhRANCAAS74zP2HEHV8XHlxc3ziEk9zIaNr2Lm
NenTNnqJFflE9NCac8CWpC1/6JZjLJKOvN1Lf0S71qDjfL91Vb1Rbgv8
-----END PRIVATE KEY-----
`;

/** The certificate (PEM). */
export const SELF_SIGNED_CERT = `
-----BEGIN CERTIFICATE-----
MIIBtjCCAVygAwIBAgIUOR99rkotOTy0+b9r6vOVcbJv7VQwCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSZXJwbGluay10ZXN0LmxvY2FsMCAXDTI2MTEyNDA4MTg1M1oY
DzIxMjYxMDMxMDgxODUzWjAdMRswGQYDVQQDDBJlcnBsaW5rLXRlc3QubG9jYWww
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAS74zP2HEHV8XHlxc3ziEk9zIaNr2Lm
NenTNnqJFflE9NCac8CWpC1/6JZjLJKOvN1Lf0S71qDjfL91Vb1Rbgv8o3gwdjAd
BgNVHQ4EFgQURu1IB8qaKBzp4HkZTDjgAyVcO+MwHwYDVR0jBBgwFoAURu1IB8qa
KBzp4HkZTDjgAyVcO+MwDwYDVR0TAQH/BAUwAwEB/zAjBgNVHREEHDAaghJlcnBs
aW5rLXRlc3QubG9jYWyHBH8AAAEwCgYIKoZIzj0EAwIDSAAwRQIhALSnZvBdVFrp
QQuhHa4T6+WugeskP4ft6sZ7AwfZJDe2AiACImxSUBkB+dv8S+Bc4TUjoCdyVmIf
wF3Qx7C2zRPyuA==
-----END CERTIFICATE-----
`;
