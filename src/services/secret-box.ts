/**
 * Encryption of back-end credentials at rest: AES-256-GCM with a random
 * 96-bit nonce per value, the owning record's id as additional data (so a
 * sealed value cannot be moved to another record), and a version prefix for
 * key rotation later.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const VERSION = "v1";

/** Seals and opens secrets with one 256-bit key. */
export interface SecretBox {
  /** Encrypts `plaintext` for the record `owner`. */
  seal(plaintext: string, owner: string): string;
  /** Decrypts a sealed value of `owner`; throws if it was altered or belongs elsewhere. */
  open(sealed: string, owner: string): string;
}

/** Creates a box around a 32-byte key. */
export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new RangeError("the encryption key must be 32 bytes");
  return {
    seal(plaintext, owner) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(Buffer.from(owner, "utf8"));
      const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return [VERSION, iv, cipher.getAuthTag(), data].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
    },
    open(sealed, owner) {
      const [version, iv, tag, data] = sealed.split(".");
      if (version !== VERSION || iv === undefined || tag === undefined || data === undefined) {
        throw new Error("not a sealed value");
      }
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
      decipher.setAAD(Buffer.from(owner, "utf8"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
    },
  };
}

/** Reads a key given as 64 hex characters or 32 bytes of base64; undefined if malformed. */
export function parseEncryptionKey(text: string): Buffer | undefined {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, "hex");
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(t)) {
    const b = Buffer.from(t.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    return b.length === 32 ? b : undefined;
  }
  return undefined;
}
