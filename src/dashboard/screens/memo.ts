/**
 * A component that renders again only when one of its props changed (by
 * identity), as React's `memo` does, without preact/compat (whose React
 * emulation would change how every input's events are read). The
 * permission editor's rows are such components: a change re-renders the
 * rows whose entries changed, not the other 10,000.
 */
import { Component, h, type ComponentChild, type FunctionComponent } from "preact";

function sameProps(a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const k of keys) if (!Object.is(a[k], b[k])) return false;
  return true;
}

/** `render` as a component that skips rendering when its props are the same objects as before. */
export function memo<P extends object>(render: FunctionComponent<P>): FunctionComponent<P> {
  class Memo extends Component<P> {
    override shouldComponentUpdate(next: P): boolean {
      return !sameProps(this.props as Record<string, unknown>, next as Record<string, unknown>);
    }
    override render(): ComponentChild {
      return h(render as FunctionComponent<object>, this.props as object);
    }
  }
  return Memo as unknown as FunctionComponent<P>;
}
