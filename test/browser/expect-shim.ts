/**
 * vitest's `expect` for a browser page: the shared AsyncWorkspace cases import `expect` from
 * 'vitest', and the page bundle aliases 'vitest' to this module (Jest's matchers as a Chai plugin,
 * as vitest itself builds them).
 */
import { ASYMMETRIC_MATCHERS_OBJECT, JestAsymmetricMatchers, JestChaiExpect, JestExtend, chai } from '@vitest/expect'

chai.use(JestExtend)
chai.use(JestChaiExpect)
chai.use(JestAsymmetricMatchers)

type Expect = typeof import('vitest').expect

const built = ((value: unknown, message?: string) => chai.expect(value, message)) as unknown as Expect
Object.assign(built, chai.expect)
Object.assign(built, (globalThis as Record<symbol, unknown>)[ASYMMETRIC_MATCHERS_OBJECT])

export const expect = built
