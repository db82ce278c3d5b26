/**
 * Literals of the EDM types a key or a parameter can have, as the fuzzer
 * writes them into URLs: for each type, forms a service of each version
 * takes (typed and untyped, V2's `guid'…'`, `datetime'…'`,
 * `datetimeoffset'…'`, `time'PT…'`, `X'…'`, number suffixes `L`, `M`, `d`,
 * `f`; V4's bare GUIDs, dates, times and enumeration members `NS.Enum'M'`)
 * and near misses a careless or hostile client writes (the other version's
 * form, another type's, out of range, over `MaxLength`, `aggregation'…'`
 * typed or inside a quoted string, quotes and percent signs left after
 * decoding). Each form says in which versions it is a literal of the type,
 * so that a generator can ask for a valid one (a request erplink forwards)
 * or an invalid one (a request it must refuse), as the key's validity
 * decides; erplink, not this table, decides in the end.
 */
import { edmTypeOf, type PropKind, type ServiceDef, type Version } from "./model.js";

/** One way to write a value: the text, and the versions in which it is a literal of the type. */
interface Form {
  readonly text: string;
  readonly v4: boolean;
  readonly v2: boolean;
}

const both = (text: string): Form => ({ text, v4: true, v2: true });
const v4 = (text: string): Form => ({ text, v4: true, v2: false });
const v2 = (text: string): Form => ({ text, v4: false, v2: true });
const none = (text: string): Form => ({ text, v4: false, v2: false });

const GUID = "01234567-89ab-cdef-0123-456789abcdef";
const GUID2 = "fedcba98-7654-3210-fedc-ba9876543210";

/** Near misses every type shares: the literal of another type, a quote or a percent left after decoding, `aggregation'…'`. */
const HOSTILE: readonly Form[] = [
  none("aggregation'%7B%7D'"),
  none("aggregation'x'"),
  none("'a''b"),
  none("'a%2527b'"),
  none("%2527x%2527"),
  none('"x"'),
  none("@x"),
  none("x'1'"),
  none("null"),
];

/** Forms of a string of at most `max` characters (unquoted text `text`). */
function stringForms(text: string, max: number | undefined): Form[] {
  const fit = (s: string) => (max === undefined || [...s].length <= max ? both : none);
  const long = "x".repeat((max ?? 10) + 1);
  const aggregation = "aggregation'{}'";
  return [
    fit(text)(`'${text.replaceAll("'", "''")}'`),
    fit("O'N")(`'O''N'`),
    fit("a b")(`'a%20b'`),
    fit("1")(`'1'`),
    // Over MaxLength: no value of the property (a model without MaxLength takes it).
    (max === undefined ? both : none)(`'${long}'`),
    // An aggregation key, as SAP CAP's V2 adapter reads it; a string in V4 (when it fits).
    { text: `'aggregation''%7B%7D'''`, v4: max === undefined || aggregation.length <= max, v2: false },
    { text: `'aggregation''x'''`, v4: max === undefined || 14 <= max, v2: false },
    none("1"),
    none("x"),
    none(`X'41'`),
    none(`N'x'`),
    none(`'a%27b'`),
    none(`'a%2520b'`),
  ];
}

function integerForms(type: string): Form[] {
  const ranges: Record<string, [string, string, string]> = {
    "Edm.Byte": ["7", "255", "256"],
    "Edm.SByte": ["-7", "127", "-129"],
    "Edm.Int16": ["-7", "32767", "32768"],
    "Edm.Int32": ["-7", "2147483647", "2147483648"],
    "Edm.Int64": ["-7", "9223372036854775807", "9223372036854775808"],
  };
  const [small, top, over] = ranges[type]!;
  const int64 = type === "Edm.Int64";
  return [
    both("1"),
    both(small),
    both(top),
    both("+3"),
    none(over),
    int64 ? v2("42L") : none("42L"),
    int64 ? v2("42l") : none("42l"),
    none("1.5"),
    none("1e3"),
    none("'1'"),
    none("0x1F"),
    none("1M"),
    none("1d"),
  ];
}

/** Literal forms of a value of EDM type `type` (qualified; an enumeration of `def` too). */
function formsOf(type: string, def: ServiceDef, text: string, max: number | undefined): Form[] {
  switch (type) {
    case "Edm.String":
      return stringForms(text, max);
    case "Edm.Byte":
    case "Edm.SByte":
    case "Edm.Int16":
    case "Edm.Int32":
    case "Edm.Int64":
      return integerForms(type);
    case "Edm.Decimal":
      return [both("1.5"), both("10"), both("-0.25"), v2("1.5M"), v2("1.5m"), none("1e5"), none("INF"), none("'1.5'"), none("1.5d"), none("1.5L")];
    case "Edm.Double":
    case "Edm.Single":
      return [both("1.5"), both("2"), both("1e3"), both("INF"), both("NaN"), both("-INF"), v2("1.5d"), v2("1.5D"), v2("2f"), v2("1.5F"), none("1.5M"), none("'1.5'"), none("1.5L"), none("0x1")];
    case "Edm.Guid":
      return [v4(GUID), v4(GUID2.toUpperCase()), v2(`guid'${GUID}'`), v2(`guid'${GUID2}'`), none(`'${GUID}'`), none(`${GUID.slice(0, -1)}g`), none(`guid'${GUID.slice(0, 8)}'`), none(`{${GUID}}`)];
    case "Edm.Date":
      // V2 takes a date as datetime'…' (SAP writes Edm.Date there as Edm.DateTime).
      return [v4("2024-01-31"), v4("0001-01-01"), v2("datetime'2024-01-31T00:00'"), none("2024-13-01"), none("'2024-01-31'"), none("2024-01-31T00:00:00Z"), none("date'2024-01-31'")];
    case "Edm.DateTime":
      return [
        v2("datetime'2024-01-31T10:00'"),
        v2("datetime'2024-01-31T10:00:00.1234567'"),
        v2("datetime'2020-01-01T00:00'"),
        none("datetime'2024-01-31'"),
        none("datetimeoffset'2024-01-31T10:00:00Z'"),
        none("2024-01-31T10:00:00"),
        none("'2024-01-31T10:00'"),
        none("datetime'2024-01-31T25:00'"),
      ];
    case "Edm.DateTimeOffset":
      return [
        v4("2024-01-31T10:00:00Z"),
        v4("2024-01-31T10:00:00%2B01:00"),
        v4("2024-01-31T10:00:00.5-05:00"),
        v2("datetimeoffset'2024-01-31T10:00:00Z'"),
        v2("datetimeoffset'2020-01-01T00:00:00Z'"),
        none("datetime'2024-01-31T10:00'"),
        none("2024-01-31T10:00:00"),
        none("'2024-01-31T10:00:00Z'"),
        none("datetimeoffset'2024-01-31'"),
      ];
    case "Edm.Time":
      return [v2("time'PT10H30M'"), v2("time'PT1H'"), v2("time'PT0S'"), none("time'10:30'"), none("10:30:00"), none("duration'PT1H'"), none("time'P1D'")];
    case "Edm.TimeOfDay":
      return [v4("10:30:00"), v4("10:30"), v4("23:59:59.999"), none("25:00:00"), none("time'PT1H'"), none("'10:30'"), none("10:30:00Z")];
    case "Edm.Duration":
      return [v4("duration'PT1H'"), v4("duration'P1DT2H'"), none("PT1H"), none("time'PT1H'"), none("duration'1H'")];
    case "Edm.Boolean":
      return [both("true"), both("false"), both("TRUE"), none("1"), none("'true'"), none("yes")];
    case "Edm.Binary":
      return [both("binary'AAEC'"), v2("X'0A1B'"), v2("binary'0A1B'"), none("X'0A1'"), none("'0A1B'"), none("binary'!!'"), v4("binary'AA=='")];
  }
  const enumName = type.slice(type.lastIndexOf(".") + 1);
  const e = def.enums?.[enumName];
  if (e !== undefined && type.startsWith(`${def.namespace}.`)) {
    const [m0, m1] = [e.members[0] ?? "A", e.members[1] ?? e.members[0] ?? "B"];
    const other = Object.keys(def.enums ?? {}).find((n) => n !== enumName) ?? "Other";
    return [
      v4(`${type}'${m0}'`),
      v4(`${type}'${m1}'`),
      v4(`${type}'0'`),
      { text: `${type}'${m0},${m1}'`, v4: e.flags === true, v2: false },
      none(`${def.namespace}.${other}'${m0}'`),
      none(`${type}'Rocket'`),
      none(`'${m0}'`),
      none(`${enumName}'${m0}'`),
      none(`Other.${enumName}'${m0}'`),
    ];
  }
  return [both(`'${text}'`)];
}

/** Whether a form is a literal of its type in `version`. */
const validIn = (f: Form, version: Version) => (version === "4.0" ? f.v4 : f.v2);

/**
 * A literal of a value of `kind` (a key property or parameter) as `version`
 * writes it: one of the valid forms when `valid`, else one of the near
 * misses (the hostile ones every type shares included); `n` picks among
 * them, `text` is a string's content.
 */
export function typedLiteral(def: ServiceDef, kind: PropKind, version: Version, valid: boolean, n: number, text = "C1", max?: number): string {
  const type = edmTypeOf(kind, version, def.namespace);
  const forms = formsOf(type, def, text, type === "Edm.String" ? max : undefined);
  const chosen = valid ? forms.filter((f) => validIn(f, version)) : [...forms.filter((f) => !validIn(f, version)), ...HOSTILE];
  const list = chosen.length > 0 ? chosen : forms;
  return list[n % list.length]!.text;
}

/** A JSON value of `kind` for a body, `n` varying it (strings fit `max`). */
export function jsonValue(kind: PropKind, version: Version, n: number, max?: number): string {
  const fit = (s: string) => JSON.stringify(max === undefined ? s : s.slice(0, Math.max(1, max)));
  switch (kind) {
    case "int":
    case "int16":
    case "byte":
    case "sbyte":
      return String(1 + (n % 9));
    case "int64":
    case "decimal":
      return version === "2.0" ? `"${1 + (n % 9)}"` : String(1 + (n % 9));
    case "double":
    case "single":
      return `${1 + (n % 9)}.5`;
    case "boolean":
      return n % 2 === 0 ? "true" : "false";
    case "guid":
      return JSON.stringify(n % 2 === 0 ? GUID : GUID2);
    case "date":
      return version === "2.0" ? '"/Date(1706659200000)/"' : '"2024-01-31"';
    case "datetime":
    case "datetimeoffset":
      return version === "2.0" ? '"/Date(1706659200000)/"' : '"2024-01-31T10:00:00Z"';
    case "time":
    case "timeofday":
      return version === "2.0" ? '"PT10H30M"' : '"10:30:00"';
    case "duration":
      return '"PT1H"';
    case "binary":
      return '"AAEC"';
    case "address":
      return '{"City":"x"}';
    case "strings":
      return version === "2.0" ? '{"results":["x"]}' : '["x"]';
    default:
      if (kind.startsWith("enum:")) return JSON.stringify("A");
      return fit(`Z${n % 100}`);
  }
}
