/** The built-in validators under their own names, for `validators: ['json', …]`. */
import { json, secrets, toml, yaml } from '../validators/index.js'
import { registerValidator } from './host.js'

export function registerBuiltInValidators(): void {
  registerValidator('json', json())
  registerValidator('yaml', yaml())
  registerValidator('toml', toml())
  registerValidator('secrets', secrets())
}
