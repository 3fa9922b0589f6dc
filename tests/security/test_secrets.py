"""Secret files and credential shapes: the matcher and the redactor on their own."""

from __future__ import annotations

import pytest
from context_companion.exclusion import DEFAULT_EXCLUDE, ExcludeMatcher, is_excluded, uri_match_path
from context_companion.redaction import REDACTION_KINDS, find_secrets, redact_secrets
from context_companion.settings import ContextSettings

# Every file name the default list must hide, and where it might sit.
SECRET_FILES = [
    ".env",
    ".env.local",
    ".env.production",
    ".envrc",
    "server.pem",
    "tls.key",
    "client.p12",
    "client.pfx",
    "release.keystore",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_ed25519_work",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".git-credentials",
    "credentials",
    "credentials.json",
    "prod.tfvars",
    "terraform.tfstate",
    "secrets.yaml",
    "secrets.json",
    "api.secret",
]
NOT_SECRET = [
    ".env.example",
    ".env.sample",
    ".env.template",
    "id_rsa.pub",
    "id_ed25519.pub",
    "secrets-docs/guide.md",
    "docs/secret-sharing.md",
    "src/keys.py",
    "src/credentials_form.tsx",
    "environment.py",
    "README.md",
    "keyboard.key.md",
    "my-secret-plan.md",
]
# One sample of every shape the redactor knows, each with a unique marker the tests look for.
SHAPES = {
    "private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAmarkerPK1x2y3\nAbCdEf==\n-----END RSA PRIVATE KEY-----",
    "aws-access-key": "AKIAMARKERAWS7EXAMPL",
    "github-token": "ghp_MarkerGitHub0123456789abcdefghijklmn",
    "gitlab-token": "glpat-MarkerGitLab012345678",
    "slack-token": "xoxb-123456789012-MarkerSlack0",
    "anthropic-api-key": "sk-ant-api03-MarkerAnthropic0123456789abcdef",
    "openai-api-key": "sk-proj-MarkerOpenAI0123456789abcdef",
    "google-api-key": "AIzaSyMarkerGoogle0123456789abcdefghijk",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtYXJrZXJKV1QifQ.MarkerJwtSignature0123",
    "url-password": "postgres://app:MarkerUrlPass99@db.internal:5432/app",
    "password": 'DB_PASSWORD = "MarkerPassword!2024"',
}
SECRET_BYTES = [
    "markerPK1x2y3",
    "AKIAMARKERAWS7EXAMPL",
    "MarkerGitHub",
    "MarkerGitLab",
    "MarkerSlack",
    "MarkerAnthropic",
    "MarkerOpenAI",
    "MarkerGoogle",
    "eyJzdWIiOiJtYXJrZXJKV1QifQ",
    "MarkerUrlPass99",
    "MarkerPassword",
]


@pytest.mark.parametrize("name", SECRET_FILES)
def test_every_default_secret_file_is_excluded_anywhere_and_in_any_case(name):
    for path in (name, f"/home/u/proj/{name}", f"C:\\Users\\u\\proj\\{name}", f"/a/b/{name.upper()}"):
        assert is_excluded(path), path
    assert ContextSettings().exclude == list(DEFAULT_EXCLUDE)


@pytest.mark.parametrize("path", NOT_SECRET)
def test_ordinary_files_and_public_keys_stay_visible(path):
    assert not is_excluded(f"/home/u/proj/{path}")


def test_a_folder_name_never_excludes_its_tree_unless_the_pattern_ends_in_a_slash():
    broad = ExcludeMatcher(["**/*secret*", "*.key"])
    assert broad.matches("/p/notes/my-secret.md")
    assert not broad.matches("/p/secrets-docs/guide.md")
    assert not broad.matches("/p/keys.key.d/readme.md")
    folder = ExcludeMatcher(["private/"])
    assert folder.matches("/p/private/a/b.txt") and not folder.matches("/p/private.txt")


def test_patterns_with_a_slash_match_the_end_of_the_path_and_negation_wins_last():
    m = ExcludeMatcher(["config/*.json", "!config/public.json", "/abs/**/deep.txt"])
    assert m.matches("/p/config/db.json") and m.matches("/p/CONFIG/DB.JSON")
    assert not m.matches("/p/config/public.json") and not m.matches("/p/other/config.json")
    assert not m.matches("/p/config/sub/db.json")  # * stays within one folder
    assert m.matches("/x/abs/one/two/deep.txt") and m.matches("/abs/deep.txt")


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///home/u/.env", "/home/u/.env"),
        ("file:///C:/Users/u/.ENV", "/C:/Users/u/.ENV"),
        ("file:///home/u/my proj #1/.env", "/home/u/my proj #1/.env"),  # a raw '#' is part of the folder's name
        ("untitled:.env", ".env"),
        ("untitled:Untitled-1", "Untitled-1"),
        ("vscode-remote://ssh-remote%2Bbox/home/u/id_rsa", "/home/u/id_rsa"),
        ("vscode-notebook-cell:/p/secrets.ipynb#cell1", "/p/secrets.ipynb"),
        ("/plain/path/.env", "/plain/path/.env"),
        ("C:\\plain\\.env", "C:\\plain\\.env"),
    ],
)
def test_every_uri_scheme_is_matched_on_its_path(uri, path):
    assert uri_match_path(uri) == path
    assert ExcludeMatcher(DEFAULT_EXCLUDE).matches_uri(uri) == is_excluded(path)


def test_untitled_and_remote_secret_documents_are_excluded():
    m = ExcludeMatcher(DEFAULT_EXCLUDE)
    assert m.matches_uri("untitled:.env") and m.matches_uri("vscode-remote://ssh-remote+h/x/Key.PEM")
    assert not m.matches_uri("untitled:Untitled-1")


@pytest.mark.parametrize(("kind", "sample"), SHAPES.items())
def test_each_credential_shape_is_redacted_with_its_kind(kind, sample):
    text = f"before {sample} after"
    out = redact_secrets(text)
    assert f"[redacted: {kind}]" in out, out
    assert out.startswith("before ") and out.endswith(" after")
    assert not any(marker in out for marker in SECRET_BYTES), out


def test_every_kind_has_a_sample():
    assert set(SHAPES) == set(REDACTION_KINDS)


def test_a_cut_off_private_key_block_is_redacted_to_the_end():
    assert redact_secrets("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz") == "key:\n[redacted: private-key]"


def test_assignments_keep_their_key_and_only_lose_the_value():
    assert redact_secrets("password=hunter2hunter2") == "password=[redacted: password]"
    assert redact_secrets('"api_key": "0123456789abcdef"') == '"api_key": "[redacted: password]"'
    assert redact_secrets('password: str = "correct horse battery"') == 'password: str = "[redacted: password]"'


@pytest.mark.parametrize(
    "code",
    [
        "token = self._next_token()",
        "api_key = settings.api_key_value",
        "password = os.environ['DB_PASSWORD']",
        "secret=${SECRET_VALUE}",
        "password = ask()",
        "pwd = 'short'",
        "@pytest.fixture\ndef token(): ...",
        "sha = 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "etag: 'e3b0c44298fc1c149afbf4c8996fb924'",
        "const sk = 'sk-short'",
        "See https://example.com/a:b@c for details",
    ],
)
def test_ordinary_code_is_left_alone(code):
    assert redact_secrets(code) == code and find_secrets(code) == []
