import { describe, expect, it } from 'vitest'
import { ValidationError, type Validator, runValidators } from '../src/engine/validator.js'
import { COSTS, defaultValidators, json, secrets, sizeLimit, toml, yaml } from '../validators/index.js'

const utf8 = new TextEncoder()
const bytes = (text: string) => utf8.encode(text)
const file = (path: string, content: string | Uint8Array) => ({ path, content: typeof content === 'string' ? bytes(content) : content })
/** Not UTF-8: a lone continuation byte and a truncated sequence (a PNG header would do too). */
const BINARY = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x80, 0xff, 0xc3])

/** Runs one validator directly, as the runner would (async or not). */
const check = async (v: Validator, content: string | Uint8Array, path = '/f') => v.validate(typeof content === 'string' ? bytes(content) : content, path)

// Fake credentials are assembled at run time so this file itself never trips a secret scanner.
const fake = {
  aws: 'AK' + 'IA' + 'Q3N7ZK2MX9PLW4RT',
  github: 'gh' + 'p_' + 'aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5',
  githubPat: 'github' + '_pat_' + '11ABCDEFG0123456789abc_' + 'Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8Cb7Az6Yx5Wv4Ut3Sr2Qp1On0Ml9Kj8Ih7Gf6E',
  slack: 'xo' + 'xb-' + '1234567890-0987654321-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op',
  openai: 's' + 'k-proj-' + 'T3BlbkFJ9xQ2mZ7vK4pL8sR1nW6yD0cH5bG3fJ2kM9qA',
  jwt: 'ey' + 'JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.' + 'ey' + 'JzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.' + 'SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
  generic: 'q7Zp3Lk9Xw2Vb8Nm4Rt6Yh1J',
  pem: ['-----BEGIN RSA ' + 'PRIVATE KEY-----', 'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun', 'VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK', '-----END RSA ' + 'PRIVATE KEY-----'].join('\n'),
}

describe('runValidators', () => {
  const pass = (name: string, match: string | string[], cost?: number): Validator => ({ name, match, cost, validate: () => true })

  it('runs validators cheapest first, ties in registration order', async () => {
    const order: string[] = []
    const spy = (name: string, cost?: number): Validator => ({
      name,
      match: '**',
      cost,
      validate() {
        order.push(name)
      },
    })
    await runValidators([spy('c', 5), spy('a'), spy('d', 5), spy('b', 0), spy('neg', -1)], [file('/x', '')])
    expect(order).toEqual(['neg', 'a', 'b', 'c', 'd'])
  })

  it('collects every failure instead of stopping at the first', async () => {
    const v: Validator[] = [
      { name: 'no-x', match: '**', validate: (c) => !new TextDecoder().decode(c).includes('x') },
      { name: 'short', match: '**', validate: (c) => c.length < 3 || 'too long' },
    ]
    const { failures, results } = await runValidators(v, [file('/a', 'x'), file('/b', 'xyz'), file('/c', 'ok')])
    expect(failures).toEqual([
      { path: '/a', validator: 'no-x', message: 'no-x rejected /a' },
      { path: '/b', validator: 'no-x', message: 'no-x rejected /b' },
      { path: '/b', validator: 'short', message: 'too long' },
    ])
    expect(results).toHaveLength(6)
    expect(results.filter((r) => r.ok).map((r) => `${r.validator}:${r.path}`)).toEqual(['no-x:/c', 'short:/a', 'short:/c'])
  })

  it('turns false, strings, throws and async rejections into messages; true/undefined pass', async () => {
    const v = (name: string, validate: Validator['validate']): Validator => ({ name, match: '**', validate })
    const { failures } = await runValidators(
      [
        v('false', () => false),
        v('string', () => 'bad content'),
        v('empty-string', () => ''),
        v('throws', () => {
          throw new Error('boom')
        }),
        v('rejects', async () => {
          throw new Error('async boom')
        }),
        v('throws-value', () => {
          throw 'plain string'
        }),
        v('async-false', async () => false),
        v('async-string', async () => 'async bad'),
        v('number', () => 42 as unknown as boolean),
        v('true', () => true),
        v('undefined', () => undefined),
        v('async-true', async () => true),
      ],
      [file('/p', 'x')],
    )
    expect(failures.map((f) => [f.validator, f.message])).toEqual([
      ['false', 'false rejected /p'],
      ['string', 'bad content'],
      ['empty-string', 'empty-string rejected /p'],
      ['throws', 'boom'],
      ['rejects', 'async boom'],
      ['throws-value', 'plain string'],
      ['async-false', 'async-false rejected /p'],
      ['async-string', 'async bad'],
      ['number', 'number returned number, expected boolean, string or undefined (/p)'],
    ])
  })

  it('keeps `this` for class-based validators', async () => {
    class Banned implements Validator {
      name = 'banned'
      match = '**'
      constructor(private readonly word: string) {}
      validate(content: Uint8Array) {
        return !new TextDecoder().decode(content).includes(this.word) || `contains ${this.word}`
      }
    }
    const { failures } = await runValidators([new Banned('TODO')], [file('/a.ts', 'TODO: x')])
    expect(failures[0]?.message).toBe('contains TODO')
  })

  it('runs a validator only on files its globs match', async () => {
    const seen: string[] = []
    const spy = (name: string, match: string | string[]): Validator => ({
      name,
      match,
      validate: (_c, path) => void seen.push(`${name}:${path}`),
    })
    const files = ['/a.json', '/src/deep/b.json', '/c.yaml', '/d.yml', '/src/x.ts', '/src/sub/y.ts', '/jsonfile', '/q1.txt', '/q12.txt'].map((p) => file(p, ''))
    await runValidators(
      [spy('json', '*.json'), spy('yaml', ['*.yaml', '*.yml']), spy('brace', '*.{yaml,yml}'), spy('src', '/src/*.ts'), spy('deep', '/src/**/*.ts'), spy('q', 'q?.txt')],
      files,
    )
    expect(seen).toEqual([
      'json:/a.json',
      'json:/src/deep/b.json',
      'yaml:/c.yaml',
      'yaml:/d.yml',
      'brace:/c.yaml',
      'brace:/d.yml',
      'src:/src/x.ts',
      'deep:/src/x.ts',
      'deep:/src/sub/y.ts',
      'q:/q1.txt',
    ])
  })

  it('accepts any iterable of files, walked once', async () => {
    function* gen() {
      yield file('/a', '1')
      yield file('/b', '2')
    }
    const { results } = await runValidators([pass('one', '**'), pass('two', '**')], gen())
    expect(results.map((r) => `${r.validator}:${r.path}`)).toEqual(['one:/a', 'one:/b', 'two:/a', 'two:/b'])
  })

  it('rejects malformed validators and files with a TypeError naming the problem', async () => {
    const bad = (validators: unknown, files: unknown = []) => runValidators(validators as Validator[], files as [])
    await expect(bad([{ match: '*', validate() {} }])).rejects.toThrow(new TypeError('runValidators: validators[0].name must be a non-empty string'))
    await expect(bad([pass('ok', '*'), { name: 'x', match: '*' }])).rejects.toThrow(/validators\[1\]\.validate must be a function/)
    await expect(bad([{ name: 'x', match: 3, validate() {} }])).rejects.toThrow(/validators\[0\]\.match must be a glob or an array of globs/)
    await expect(bad([{ name: 'x', match: '*', cost: Number.NaN, validate() {} }])).rejects.toThrow(/validators\[0\]\.cost must be a finite number/)
    await expect(bad([null])).rejects.toThrow(/validators\[0\] must be an object/)
    await expect(bad('nope')).rejects.toThrow(/validators must be an array/)
    await expect(bad([], 5)).rejects.toThrow(/files must be an iterable/)
    await expect(bad([], [{ path: '/a', content: 'text' }])).rejects.toThrow(/files\[0\]\.content must be a Uint8Array/)
    await expect(bad([], [{ path: '/a', content: 'text' }])).rejects.toBeInstanceOf(TypeError)
  })

  it('does not call any validator when the input is malformed', async () => {
    let called = false
    const spy: Validator = { name: 'spy', match: '**', validate: () => void (called = true) }
    await expect(runValidators([spy, { name: '' } as Validator], [file('/a', '')])).rejects.toThrow(TypeError)
    expect(called).toBe(false)
  })
})

describe('ValidationError', () => {
  it('lists every failure in its message and keeps them structured', () => {
    const failures = [
      { path: '/a.json', validator: 'json', message: 'invalid JSON at 1:2: oops' },
      { path: '/b', validator: 'custom', message: 'line one\nline two' },
    ]
    const error = new ValidationError(failures)
    expect(error).toBeInstanceOf(Error)
    expect(error.name).toBe('ValidationError')
    expect(error.failures).toEqual(failures)
    expect(error.message).toBe('Validation failed (2 failures):\n  /a.json (json): invalid JSON at 1:2: oops\n  /b (custom): line one\n    line two')
  })
})

describe('json', () => {
  const v = json()

  it('has the defaults', () => {
    expect(v).toMatchObject({ name: 'json', match: '*.json', cost: COSTS.json })
    expect(json({ match: ['*.json', '*.geojson'] }).match).toEqual(['*.json', '*.geojson'])
  })

  it('accepts valid JSON, with or without a BOM', async () => {
    expect(await check(v, '{"a": [1, 2.5e3, -0, true, null, "x\\u00e9\\n"]}\n')).toBe(true)
    expect(await check(v, '\uFEFF"top-level string"')).toBe(true)
  })

  it.each([
    ['{\n  "a": 1,\n  "b": 2,\n}', '4:1', "expected a property name in double quotes, found '}'"],
    ['{"a": 1 "b": 2}', '1:9', "expected ',' or '}', found '\"'"],
    ['[1, 2,]', '1:7', "unexpected ']', expected a value"],
    ["{'a': 1}", '1:2', "expected a property name in double quotes or '}', found '''"],
    ['{"a" 1}', '1:6', "expected ':' after the property name, found '1'"],
    ['{"a": 01}', '1:8', "expected ',' or '}', found '1'"],
    ['{"a": "x\ny"}', '1:9', 'unescaped U+000A in string'],
    ['["\\x"]', '1:3', "bad escape '\\x' in string"],
    ['{"a": [1, 2', '1:12', 'unexpected end of input'],
    ['"open', '1:1', 'unterminated string'],
    ['', '1:1', 'unexpected end of input'],
    ['{} {}', '1:4', "unexpected '{' after the JSON value"],
    ['// comment\n{}', '1:1', "unexpected '/', expected a value"],
    ['{"a": undefined}', '1:7', "unexpected 'u', expected a value"],
    ['-', '1:1', 'invalid number'],
  ])('rejects %j at %s', async (text, at, reason) => {
    expect(await check(v, text, '/x.json')).toBe(`invalid JSON at ${at}: ${reason}`)
  })

  it('survives deep nesting in the error path', async () => {
    expect(await check(v, '['.repeat(100_000))).toBe('invalid JSON at 1:100001: unexpected end of input')
  })

  it('reads tsconfig and friends as JSON with comments, others strictly', async () => {
    const jsonc = '{\n  // why\n  "compilerOptions": { "strict": true, /* block */ },\n  "include": ["src",],\n}\n'
    for (const path of ['/tsconfig.json', '/pkg/tsconfig.build.json', '/.vscode/settings.json', '/.devcontainer/devcontainer.json']) {
      expect(await check(v, jsonc, path), path).toBe(true)
    }
    expect(await check(v, jsonc, '/package.json')).toBe("invalid JSON at 2:3: expected a property name in double quotes or '}', found '/'")
    expect(await check(v, '{ /* open', '/tsconfig.json')).toBe('invalid JSON at 1:3: unterminated comment')
    expect(await check(v, '{ "a": 1 } x', '/tsconfig.json')).toBe("invalid JSON at 1:12: unexpected 'x' after the JSON value")
    expect(await check(json({ jsonc: [] }), jsonc, '/tsconfig.json')).toMatch(/^invalid JSON at 2:3/)
  })

  it('reports binary content as invalid UTF-8', async () => {
    expect(await check(v, BINARY)).toBe('not valid UTF-8 text, so not valid JSON (binary content?)')
  })
})

describe('yaml', () => {
  const v = yaml()

  it('has the defaults', () => {
    expect(v).toMatchObject({ name: 'yaml', match: '*.{yaml,yml}', cost: COSTS.yaml })
  })

  it('accepts valid YAML, including multi-document streams, empty files and unknown tags', async () => {
    expect(await check(v, 'a: 1\nb:\n  - x\n  - y\n---\nc: [1, 2]\n')).toBe(true)
    expect(await check(v, '')).toBe(true)
    expect(await check(v, 'Resources:\n  Bucket: !Ref MyBucket\n')).toBe(true)
  })

  it('rejects bad YAML with line and column, in any document', async () => {
    expect(await check(v, 'a: 1\nb: c: d\n')).toBe('invalid YAML at line 2, column 4: Nested mappings are not allowed in compact mappings')
    expect(await check(v, 'ok: 1\n---\nkey: value\nkey: again\n')).toMatch(/^invalid YAML at line 4, column 1: Map keys must be unique/)
    expect(await check(v, 'a:\n\t- tab\n')).toMatch(/^invalid YAML at line 2, column 1: /)
  })

  it('counts further errors instead of quoting the source', async () => {
    const message = await check(v, 'x:\n  - a\n - b\n')
    expect(message).toBe('invalid YAML at line 3, column 1: A block sequence may not be used as an implicit map key (and 2 more)')
  })

  it('reports binary content as invalid UTF-8', async () => {
    expect(await check(v, BINARY)).toBe('not valid UTF-8 text, so not valid YAML (binary content?)')
  })
})

describe('toml', () => {
  const v = toml()

  it('has the defaults', () => {
    expect(v).toMatchObject({ name: 'toml', match: '*.toml', cost: COSTS.toml })
  })

  it('accepts valid TOML', async () => {
    expect(await check(v, '[package]\nname = "x"\nversion = "1.0.0"\n\n[deps]\nserde = { version = "1", features = ["derive"] }\n')).toBe(true)
  })

  it('rejects bad TOML with line and column, without the code block', async () => {
    const message = await check(v, 'a = 1\nb = \n')
    expect(message).toMatch(/^invalid TOML at line 2, column \d+: \S/)
    expect(message).not.toContain('\n')
    expect(await check(v, 'a = 1\na = 2\n')).toMatch(/^invalid TOML at line 2, column \d+: /)
  })

  it('reports binary content as invalid UTF-8', async () => {
    expect(await check(v, BINARY)).toBe('not valid UTF-8 text, so not valid TOML (binary content?)')
  })
})

describe('sizeLimit', () => {
  it('passes up to the limit and names size and limit above it', async () => {
    const v = sizeLimit(1024)
    expect(v).toMatchObject({ name: 'sizeLimit', match: '**', cost: COSTS.sizeLimit })
    expect(await check(v, new Uint8Array(1024))).toBe(true)
    expect(await check(v, new Uint8Array(1025))).toBe('size 1025 bytes (1 KiB) exceeds the limit of 1024 bytes (1 KiB)')
    expect(await check(sizeLimit(0), new Uint8Array(3 * 1024 * 1024))).toBe('size 3145728 bytes (3 MiB) exceeds the limit of 0 bytes')
  })

  it('takes a match option', () => {
    expect(sizeLimit(10, { match: '*.png' }).match).toBe('*.png')
  })

  it('rejects a bad limit', () => {
    expect(() => sizeLimit(-1)).toThrow(new TypeError('sizeLimit(): maxBytes must not be negative'))
    expect(() => sizeLimit(1.5)).toThrow(/maxBytes must be an integer/)
    expect(() => sizeLimit(Number.POSITIVE_INFINITY)).toThrow(TypeError)
    expect(() => sizeLimit('10' as unknown as number)).toThrow(/maxBytes must be a finite number/)
  })
})

describe('secrets', () => {
  const v = secrets()

  it('has the defaults', () => {
    expect(v).toMatchObject({ name: 'secrets', match: '**', cost: COSTS.secrets })
  })

  it.each([
    ['AWS access key ID', `aws_access_key_id = ${fake.aws}`, 'AKIA****'],
    ['GitHub token', `token: ${fake.github}`, 'ghp_****'],
    ['GitHub fine-grained token', `GH=${fake.githubPat}`, 'github_pat_****'],
    ['Slack token', `slack: "${fake.slack}"`, 'xoxb-****'],
    ['OpenAI-style API key', `OPENAI = "${fake.openai}"`, 'sk-****'],
    ['JWT', `Authorization: Bearer ${fake.jwt}`, 'eyJ****'],
    ['secret assignment', `api_key = "${fake.generic}"`, '****'],
    ['secret assignment', `{ "clientSecret": "${fake.generic}" }`, '****'],
    ['secret assignment', `export DB_PASSWORD=${fake.generic}`, '****'],
  ])('detects a %s and masks it', async (kind, line, shown) => {
    const message = await check(v, `first line\n${line}\n`)
    expect(message).toBe(`found a possible secret: ${kind} at line 2 (${shown})`)
  })

  it('detects private key blocks, naming only the header', async () => {
    const message = await check(v, `# key\n${fake.pem}\n`)
    expect(message).toBe('found a possible secret: private key at line 2 (-----BEGIN RSA PRIVATE KEY-----)')
    // As embedded in a JSON service-account file, with escaped newlines.
    const embedded = JSON.stringify({ private_key: fake.pem })
    expect(await check(v, embedded)).toMatch(/^found a possible secret: private key at line 1/)
  })

  it('never echoes a secret', async () => {
    const all = Object.values(fake).join('\n') + `\npassword: "${fake.generic}"\n`
    const message = String(await check(v, all))
    expect(message).toMatch(/^found 8 possible secrets: /)
    for (const [name, secret] of Object.entries(fake)) {
      if (name !== 'pem') expect(message, name).not.toContain(secret.slice(0, 12))
    }
    expect(message).not.toContain('MIIEowIBAAKC')
  })

  it('detects encrypted PEM keys behind their header lines', async () => {
    const lines = fake.pem.split('\n')
    const encrypted = [lines[0], 'Proc-Type: 4,ENCRYPTED', 'DEK-Info: AES-128-CBC,3F17F5316E2BAC89', '', ...lines.slice(1)].join('\n')
    expect(await check(v, encrypted)).toMatch(/^found a possible secret: private key at line 1/)
  })

  it('stays fast on pathological input', async () => {
    const header = '-----BEGIN ' + 'PRIVATE KEY-----'
    const inputs = [
      header + '\n' + 'A: '.repeat(5000),
      'a'.repeat(1_000_000),
      'api_key="'.repeat(100_000),
      'x.token-'.repeat(100_000),
      ('ey' + 'Jaaaaaaaaaaaaa.').repeat(60_000),
    ]
    const start = performance.now()
    for (const input of inputs) await check(v, input)
    expect(performance.now() - start).toBeLessThan(2000)
  })

  it('reports a token once even when it is also a secret assignment', async () => {
    expect(await check(v, `GITHUB_TOKEN=${fake.github}\n`)).toBe('found a possible secret: GitHub token at line 1 (ghp_****)')
  })

  it('lists findings in file order with their lines, capped at ten', async () => {
    const lines = Array.from({ length: 12 }, (_, i) => `k${i} = ${fake.aws}`)
    const message = String(await check(v, `x\n${fake.github}\n${lines.join('\n')}`))
    expect(message).toMatch(/^found 13 possible secrets: GitHub token at line 2 \(ghp_\*\*\*\*\), AWS access key ID at line 3 /)
    expect(message).toMatch(/AWS access key ID at line 11 \(AKIA\*\*\*\*\), and 3 more$/)
  })

  it('ignores ordinary content, placeholders, templates and headers without keys', async () => {
    const clean = [
      'const apiKey = process.env.API_KEY',
      'password = "changeme"',
      'token: ${{ secrets.GITHUB_TOKEN }}',
      'api_key: "your-api-key-here-0000"',
      'max_tokens = 4096',
      'tokenizer = "bert-base-uncased-v2"',
      'aws_access_key_id = AKIAIOSFODNN7EXAMPLE',
      'secret = "aaaaaaaaaaaaaaaaaaaaaa1"',
      'Use "-----BEGIN PRIVATE KEY-----" blocks for keys.',
      'sk-learn-some-very-long-identifier-name',
      'integrity: "sha512-3NxN8+78OdzbT7C/WjGsyfPAtJaN3FNDsWxv7Y7mcDsT"',
      'xoxb-your-token-here',
    ].join('\n')
    expect(await check(v, clean)).toBe(true)
  })

  it('allows values matched by `allow`', async () => {
    const allowed = secrets({ allow: [/^AKIA/g] })
    // Twice: a global `allow` regex must not carry lastIndex from one test to the next.
    expect(await check(allowed, `a = ${fake.aws}\nb = ${fake.aws}`)).toBe(true)
    expect(await check(allowed, `a = ${fake.github}`)).toMatch(/GitHub token/)
  })

  it('adds custom patterns, masking the match or its `secret` group', async () => {
    const stripe = 'sk_' + 'live_' + '51HxYz2eZvKYlo2C0123456789abcdef'
    const custom = secrets({
      patterns: [
        { name: 'Stripe key', regex: /\bsk_live_[A-Za-z0-9]{24,}/ },
        { name: 'internal token', regex: /X-Internal: (?<secret>[a-z0-9]{20})/i },
      ],
    })
    expect(await check(custom, `stripe=${stripe}`)).toBe('found a possible secret: Stripe key at line 1 (sk_l****)')
    const internal = await check(custom, 'hdr\nX-Internal: abcdefghij0123456789')
    expect(internal).toBe('found a possible secret: internal token at line 2 (abcd****)')
  })

  it('scans binary content without crashing', async () => {
    const blob = new Uint8Array([...BINARY, ...bytes(`\0${fake.aws}\0`), 0xff])
    expect(await check(v, blob)).toBe('found a possible secret: AWS access key ID at line 1 (AKIA****)')
    expect(await check(v, BINARY)).toBe(true)
  })

  it('rejects bad options with a TypeError', () => {
    expect(() => secrets({ patterns: [{ name: 'x', regex: 'AKIA' as unknown as RegExp }] })).toThrow(
      new TypeError('secrets(): options.patterns.0.regex must be a RegExp'),
    )
    expect(() => secrets({ allow: 'x' as unknown as RegExp[] })).toThrow(/options\.allow must be an array of RegExp/)
    expect(() => secrets({ mach: '*' } as unknown as { match: string })).toThrow(/unknown options 'mach'/)
  })
})

describe('option checking', () => {
  it('rejects bad match globs and unknown options in every factory', () => {
    expect(() => json({ match: '' })).toThrow(new TypeError('json(): options.match must be a non-empty glob string'))
    expect(() => yaml({ match: 5 as unknown as string })).toThrow(/^yaml\(\): options\.match/)
    expect(() => toml('x' as unknown as {})).toThrow(/^toml\(\): options must be an object/)
    expect(() => json({ jsonc: [3 as unknown as string] })).toThrow(/options\.jsonc/)
    expect(() => yaml({ jsonc: [] } as unknown as {})).toThrow(/unknown options 'jsonc'/)
  })
})

describe('together', () => {
  it('defaultValidators checks JSON, YAML and TOML by extension, and runValidators reports all', async () => {
    expect(defaultValidators().map((v) => v.name)).toEqual(['json', 'yaml', 'toml'])
    const files = [
      file('/package.json', '{"name": "x"}'),
      file('/bad.json', '{"a":}'),
      file('/ci.yml', 'on: [push\n'),
      file('/Cargo.toml', '[package\n'),
      file('/logo.png', BINARY),
      file('/README.md', '# {not json'),
    ]
    const { failures, results } = await runValidators(defaultValidators(), files)
    expect(results).toHaveLength(4)
    expect(failures.map((f) => `${f.validator} ${f.path}`)).toEqual(['json /bad.json', 'toml /Cargo.toml', 'yaml /ci.yml'])
    expect(failures[0]?.message).toBe("invalid JSON at 1:6: unexpected '}', expected a value")
    expect(String(new ValidationError(failures).message)).toMatch(/^Validation failed \(3 failures\):\n  \/bad\.json \(json\): invalid JSON at 1:6/)
  })

  it('orders built-ins by cost: size, then syntax, then secrets', async () => {
    const { results } = await runValidators([secrets(), yaml(), json(), sizeLimit(10)], [file('/a.json', `{"k": "${fake.aws}"}`)])
    expect(results.map((r) => `${r.validator}:${r.ok}`)).toEqual(['sizeLimit:false', 'json:true', 'secrets:false'])
  })
})
