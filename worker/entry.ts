/**
 * The default worker entry: the built-in validators under their own names, then serve. A project
 * with its own validators or compensators writes an entry like this one.
 */
import { json, secrets, toml, yaml } from '../validators/index.js'
import { registerValidator, serve } from './serve.js'

registerValidator('json', json())
registerValidator('yaml', yaml())
registerValidator('toml', toml())
registerValidator('secrets', secrets())

await serve()
