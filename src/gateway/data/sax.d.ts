/** The part of `sax` (isaacs' SAX parser, which ships no types) that `./v2-urls.ts` uses. */
declare module "sax" {
  export interface QualifiedAttribute {
    name: string;
    value: string;
    prefix: string;
    local: string;
    uri: string;
  }
  export interface QualifiedTag {
    name: string;
    prefix: string;
    local: string;
    uri: string;
    attributes: Record<string, QualifiedAttribute>;
    isSelfClosing: boolean;
  }
  export interface SAXParser {
    /** Characters (UTF-16 code units) read so far. */
    position: number;
    /** One past the position of the `<` that opened the current markup. */
    startTagPosition: number | undefined;
    state: number;
    error: Error | null;
    onopentag: (tag: QualifiedTag) => void;
    onclosetag: (name: string) => void;
    ontext: (text: string) => void;
    oncdata: (text: string) => void;
    onprocessinginstruction: (pi: { name: string; body: string }) => void;
    onerror: (err: Error) => void;
    write(s: string): SAXParser;
    close(): SAXParser;
  }
  export function parser(strict: boolean, options: { xmlns?: boolean; position?: boolean; trim?: boolean; normalize?: boolean }): SAXParser;
  export const STATE: Record<string, number>;
  const sax: { parser: typeof parser; STATE: typeof STATE };
  export default sax;
}
