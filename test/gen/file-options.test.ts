/**
 * The language options of every erplink proto file (read from the generated
 * code's embedded descriptors): plain protoc plugins need `go_package`, and
 * every file of a package must agree (buf lint's PACKAGE_SAME_* rules only
 * compare the files that set them). A new proto file without them fails here.
 */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { DescFile } from "@bufbuild/protobuf";

const Options = suite("proto file options");

const GEN = join(import.meta.dirname, "..", "..", "src", "gen", "erplink");

function modules(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return modules(path);
    return name.endsWith("_pb.ts") ? [path] : [];
  });
}

async function erplinkFiles(): Promise<DescFile[]> {
  const files: DescFile[] = [];
  for (const path of modules(GEN)) {
    const mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod)) {
      if (name.startsWith("file_")) files.push(value as DescFile);
    }
  }
  return files;
}

const pascal = (s: string) =>
  s
    .split("_")
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join("");

Options("every erplink proto file sets the go, java, c#, php, ruby and objc options derived from its package", async () => {
  const files = await erplinkFiles();
  assert.ok(files.length >= 11, `only ${files.length} generated files found`);
  for (const file of files) {
    const m = /^erplink\.([a-z]+)\.(v[0-9]+)$/.exec(file.proto.package);
    assert.ok(m, `${file.name}: package ${file.proto.package} is not erplink.<domain>.v<N>`);
    const [, domain, version] = m as unknown as [string, string, string];
    const base = file.name.split("/").at(-1)!;
    const D = pascal(domain);
    const V = version.toUpperCase();
    const o = file.proto.options;
    assert.equal(
      {
        go: o?.goPackage,
        javaPackage: o?.javaPackage,
        javaMultipleFiles: o?.javaMultipleFiles,
        javaOuterClassname: o?.javaOuterClassname,
        csharp: o?.csharpNamespace,
        php: o?.phpNamespace,
        ruby: o?.rubyPackage,
        objc: o?.objcClassPrefix,
      },
      {
        go: `erplink.dev/gen/go/erplink/${domain}/${version};${domain}${version}`,
        javaPackage: `dev.erplink.${domain}.${version}`,
        javaMultipleFiles: true,
        javaOuterClassname: `${pascal(base)}Proto`,
        csharp: `Erplink.${D}.${V}`,
        php: `Erplink\\${D}\\${V}`,
        ruby: `Erplink::${D}::${V}`,
        objc: `E${D.charAt(0)}X`,
      },
      file.name,
    );
  }
});

Options.run();
