/**
 * The default Node worker entry: the built-in validators, then serve. Adapters load on first use.
 * A project with its own validators or compensators writes an entry like this one.
 */
import { registerBuiltInValidators } from './builtins.js'
import { serve } from './serve.js'

registerBuiltInValidators()
await serve()
