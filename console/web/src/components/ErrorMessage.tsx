import { ApiError } from '../api/client'

/** An error of a call, with the API's code and message when it sent them. */
export function ErrorMessage({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null
  let text: string
  let code: string | undefined
  if (error instanceof ApiError) {
    code = error.code
    text = error.body.field ? `${error.message} (field ${error.body.field})` : error.message
  } else {
    text = error instanceof Error ? error.message : String(error)
  }
  return (
    <div className="error" role="alert">
      {title && <strong>{title}: </strong>}
      {code && <code className="error-code">{code}</code>} {text}
    </div>
  )
}
