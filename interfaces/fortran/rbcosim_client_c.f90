!> rbcosim_client_c: the C API of interfaces/c/rbcosim_client.h as is -- bind(C) twins of its
!> structs and ISO_C_BINDING interfaces to every function. Use it through module
!> rbcosim_client, which re-exports all of it (see there for the array-order rules).
module rbcosim_client_c
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! --- constants and types of the header ---------------------------------------------------
  character(len=*), parameter, public :: RBC_PROTOCOL_VERSION = "1.3"
  integer, parameter, public :: RBC_PROTOCOL_MAJOR = 1
  enum, bind(c)
    enumerator :: RBC_OK = 0, RBC_ERR_SERVER = 1, RBC_ERR_TIMEOUT = 2, RBC_ERR_TRANSPORT = 3, &
                  RBC_ERR_BAD_REPLY = 4, RBC_ERR_VERSION = 5, RBC_ERR_ARGUMENT = 6, &
                  RBC_ERR_NO_MEMORY = 7
  end enum
  public :: RBC_OK, RBC_ERR_SERVER, RBC_ERR_TIMEOUT, RBC_ERR_TRANSPORT, RBC_ERR_BAD_REPLY, &
            RBC_ERR_VERSION, RBC_ERR_ARGUMENT, RBC_ERR_NO_MEMORY

  !> CURVE keys, Z85 text (40 characters, NUL-terminated); all three or none.
  type, bind(c), public :: rbc_curve_keys
    type(c_ptr) :: server_public = c_null_ptr, client_public = c_null_ptr, &
                   client_secret = c_null_ptr
  end type rbc_curve_keys

  !> The coupling the server reports at attach (protocol 1.2).
  type, bind(c), public :: rbc_coupling
    character(kind=c_char) :: scheme(64) = c_null_char ! NUL-terminated; see rbcf_scheme
    integer(c_int) :: extrapolation = 0   ! order of the wrench polynomial (0, 1, 2)
    integer(c_int) :: micro_steps = 1     ! flexible-side sub-steps per macro step
    real(c_double) :: macro_step = 0      ! s
    real(c_double) :: t_end = 0           ! s
    integer(c_long) :: n_steps = 0        ! macro steps from t = 0 to t_end
    integer(c_int) :: output_every = 1    ! result row every this many steps
    integer(c_int) :: added_mass = 0      ! 1: hand the added mass over before the first report
  end type rbc_coupling

  !> Session options (pointers: NUL-terminated strings and arrays of them).
  type, bind(c), public :: rbc_session_options
    type(c_ptr) :: base_dir = c_null_ptr
    type(c_ptr) :: override_keys = c_null_ptr, override_values = c_null_ptr
    integer(c_int) :: n_overrides = 0
    real(c_double) :: barrier_timeout = 0 ! s; <= 0: the server's default
    integer(c_int) :: output_every = 0    ! <= 0: the scenario's
    integer(c_int) :: snapshot_every = 0  ! 0: none
    integer(c_int) :: wait_for_joints = 0
  end type rbc_session_options

  !> The result of attach, step and report; arrays owned by the client.
  type, bind(c), public :: rbc_exchange
    integer(c_long) :: step = 0           ! the session's step index after the call
    real(c_double) :: time = 0            ! s
    integer(c_int) :: n_points = 0, n_joints = 0
    type(c_ptr) :: kinematics = c_null_ptr ! [n_points][13]
    type(c_ptr) :: motions = c_null_ptr    ! [n_points][19]
    type(c_ptr) :: gaps = c_null_ptr       ! [n_joints][4]; NULL after attach
  end type rbc_exchange

  !> The inputs of one step or report (pointers to C-order doubles, or NULL).
  type, bind(c), public :: rbc_inputs
    type(c_ptr) :: wrench = c_null_ptr     ! [n_points][wrench_terms][6]
    integer(c_int) :: wrench_terms = 0     ! 1..3
    type(c_ptr) :: flex_kinematics = c_null_ptr    ! [n_joints][13]
    type(c_ptr) :: flex_energy = c_null_ptr        ! [n_joints] J
    type(c_ptr) :: interface_jacobian = c_null_ptr ! [n_points][2][6][6]
    integer(c_int) :: kinematics_at_end = 0
  end type rbc_inputs

  ! --- the C functions ---------------------------------------------------------------------
  interface
    type(c_ptr) function rbc_connect(endpoint, keys, timeout_ms, error, error_size) &
        bind(c, name="rbc_connect")
      import :: c_ptr, c_char, c_int, c_size_t
      character(kind=c_char), intent(in) :: endpoint(*)
      type(c_ptr), value :: keys
      integer(c_int), value :: timeout_ms
      character(kind=c_char), intent(out) :: error(*)
      integer(c_size_t), value :: error_size
    end function rbc_connect
    subroutine rbc_destroy(client) bind(c, name="rbc_destroy")
      import :: c_ptr
      type(c_ptr), value :: client
    end subroutine rbc_destroy
    subroutine rbc_set_timeout(client, timeout_ms) bind(c, name="rbc_set_timeout")
      import :: c_ptr, c_int
      type(c_ptr), value :: client
      integer(c_int), value :: timeout_ms
    end subroutine rbc_set_timeout
    type(c_ptr) function rbc_error_code(client) bind(c, name="rbc_error_code")
      import :: c_ptr
      type(c_ptr), value :: client
    end function rbc_error_code
    type(c_ptr) function rbc_error_message(client) bind(c, name="rbc_error_message")
      import :: c_ptr
      type(c_ptr), value :: client
    end function rbc_error_message
    integer(c_int) function rbc_hello(client, client_name) bind(c, name="rbc_hello")
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: client
      character(kind=c_char), intent(in) :: client_name(*)
    end function rbc_hello
    type(c_ptr) function rbc_server_version(client) bind(c, name="rbc_server_version")
      import :: c_ptr
      type(c_ptr), value :: client
    end function rbc_server_version
    integer(c_int) function rbc_create_session(client, scenario_path, scenario_text, options) &
        bind(c, name="rbc_create_session")
      import :: c_ptr, c_int
      type(c_ptr), value :: client, scenario_path, scenario_text, options
    end function rbc_create_session
    integer(c_int) function rbc_join_session(client, session_id) &
        bind(c, name="rbc_join_session")
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: client
      character(kind=c_char), intent(in) :: session_id(*)
    end function rbc_join_session
    type(c_ptr) function rbc_session_id(client) bind(c, name="rbc_session_id")
      import :: c_ptr
      type(c_ptr), value :: client
    end function rbc_session_id
    integer(c_int) function rbc_attach(client, points, n_points, joints, n_joints, name, &
                                       force, coupling, initial) bind(c, name="rbc_attach")
      import :: c_ptr, c_int, rbc_coupling, rbc_exchange
      type(c_ptr), value :: client, points, joints, name
      integer(c_int), value :: n_points, n_joints, force
      type(rbc_coupling), intent(out) :: coupling
      type(rbc_exchange), intent(out) :: initial
    end function rbc_attach
    integer(c_int) function rbc_set_added_mass(client, added_mass, frames) &
        bind(c, name="rbc_set_added_mass")
      import :: c_ptr, c_int
      type(c_ptr), value :: client, added_mass, frames
    end function rbc_set_added_mass
    integer(c_int) function rbc_report(client, inputs, out) bind(c, name="rbc_report")
      import :: c_ptr, c_int, rbc_inputs, rbc_exchange
      type(c_ptr), value :: client
      type(rbc_inputs), intent(in) :: inputs
      type(rbc_exchange), intent(out) :: out
    end function rbc_report
    integer(c_int) function rbc_step(client, inputs, out) bind(c, name="rbc_step")
      import :: c_ptr, c_int, rbc_inputs, rbc_exchange
      type(c_ptr), value :: client
      type(rbc_inputs), intent(in) :: inputs
      type(rbc_exchange), intent(out) :: out
    end function rbc_step
    integer(c_int) function rbc_step_send(client, inputs) bind(c, name="rbc_step_send")
      import :: c_ptr, c_int, rbc_inputs
      type(c_ptr), value :: client
      type(rbc_inputs), intent(in) :: inputs
    end function rbc_step_send
    integer(c_int) function rbc_step_wait(client, out) bind(c, name="rbc_step_wait")
      import :: c_ptr, c_int, rbc_exchange
      type(c_ptr), value :: client
      type(rbc_exchange), intent(out) :: out
    end function rbc_step_wait
    integer(c_long) function rbc_step_index(client) bind(c, name="rbc_step_index")
      import :: c_ptr, c_long
      type(c_ptr), value :: client
    end function rbc_step_index
    real(c_double) function rbc_time(client) bind(c, name="rbc_time")
      import :: c_ptr, c_double
      type(c_ptr), value :: client
    end function rbc_time
    integer(c_int) function rbc_save(client, name, path) bind(c, name="rbc_save")
      import :: c_ptr, c_int
      type(c_ptr), value :: client, name, path
    end function rbc_save
    integer(c_int) function rbc_restore(client, name, path) bind(c, name="rbc_restore")
      import :: c_ptr, c_int
      type(c_ptr), value :: client, name, path
    end function rbc_restore
    integer(c_int) function rbc_get_state(client, blob, size, step, time) &
        bind(c, name="rbc_get_state")
      import :: c_ptr, c_int, c_size_t, c_long, c_double
      type(c_ptr), value :: client
      type(c_ptr), intent(out) :: blob
      integer(c_size_t), intent(out) :: size
      integer(c_long), intent(out) :: step
      real(c_double), intent(out) :: time
    end function rbc_get_state
    integer(c_int) function rbc_set_state(client, blob, size, step) &
        bind(c, name="rbc_set_state")
      import :: c_ptr, c_int, c_size_t, c_long
      type(c_ptr), value :: client, blob
      integer(c_size_t), value :: size
      integer(c_long), value :: step
    end function rbc_set_state
    integer(c_int) function rbc_heartbeat(client) bind(c, name="rbc_heartbeat")
      import :: c_ptr, c_int
      type(c_ptr), value :: client
    end function rbc_heartbeat
    integer(c_int) function rbc_detach(client) bind(c, name="rbc_detach")
      import :: c_ptr, c_int
      type(c_ptr), value :: client
    end function rbc_detach
    integer(c_int) function rbc_close_session(client) bind(c, name="rbc_close_session")
      import :: c_ptr, c_int
      type(c_ptr), value :: client
    end function rbc_close_session
    subroutine c_free(p) bind(c, name="free")
      import :: c_ptr
      type(c_ptr), value :: p
    end subroutine c_free
    integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function c_strlen
  end interface
  public :: c_free, c_strlen
  public :: rbc_connect, rbc_destroy, rbc_set_timeout, rbc_error_code, rbc_error_message, &
            rbc_hello, rbc_server_version, rbc_create_session, rbc_join_session, &
            rbc_session_id, rbc_attach, rbc_set_added_mass, rbc_report, rbc_step, &
            rbc_step_send, rbc_step_wait, rbc_step_index, rbc_time, rbc_save, rbc_restore, &
            rbc_get_state, rbc_set_state, rbc_heartbeat, rbc_detach, rbc_close_session

end module rbcosim_client_c
