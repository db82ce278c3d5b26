/** The Overview screen (not built yet: its data is available through the admin API). */
export function Overview() {
  return (
    <section>
      <h1>Overview</h1>
      <p>This screen is not built yet. Its data is available through the admin API (see /api-reference).</p>
    </section>
  );
}
