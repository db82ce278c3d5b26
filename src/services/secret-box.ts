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
      const nonce = Buffer.from(iv, "base64url");
      const authTag = Buffer.from(tag, "base64url");
      // GCM would accept a truncated tag: insist on the full 128 bits.
      if (nonce.length !== 12 || authTag.length !== 16) throw new Error("not a sealed value");
      const decipher = createDecipheriv("aes-256-gcm", key, nonce, { authTagLength: 16 });
      decipher.setAAD(Buffer.from(owner, "utf8"));
      decipher.setAuthTag(authTag);
      return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
    },
  };
}
