/**
 * Suites that need something from outside the project (a Docker daemon, Chromium) skip with a
 * one-line reason on a machine without it, and fail instead when REWINDFS_REQUIRE names it, as CI
 * sets it (REWINDFS_REQUIRE=docker,chromium), so a missing provision can never pass as a skip.
 */
const required = new Set((process.env.REWINDFS_REQUIRE ?? '').split(',').map((s) => s.trim()).filter(Boolean))

/** Resolves to true when the capability can be used; false (with a printed reason) to skip. Throws when required. */
export function capability(name: string, problem: string | undefined): boolean {
  if (problem === undefined) return true
  if (required.has(name)) throw new Error(`REWINDFS_REQUIRE includes '${name}' but it is not available: ${problem}`)
  console.log(`[rewindfs] skipping the ${name} suite: ${problem} (set REWINDFS_REQUIRE=${name} to make this a failure)`)
  return false
}
